"""Failed deliveries kept the first 200 bytes of the receiver's answer; only the status code is
kept now (a receiver's answer can hold anything it likes). Old entries are cut to their code."""

import re

from django.db import migrations

HTTP_ERROR = re.compile(r"^(HTTP \d{3}):")


def drop_response_bodies(apps, schema_editor):
    WebhookDelivery = apps.get_model("scoring", "WebhookDelivery")
    for delivery in WebhookDelivery.objects.filter(last_error__startswith="HTTP ").iterator():
        match = HTTP_ERROR.match(delivery.last_error)
        if match:
            WebhookDelivery.objects.filter(pk=delivery.pk).update(last_error=match.group(1))


class Migration(migrations.Migration):
    dependencies = [
        ("scoring", "0007_score_json_as_text"),
    ]

    operations = [migrations.RunPython(drop_response_bodies, migrations.RunPython.noop)]
