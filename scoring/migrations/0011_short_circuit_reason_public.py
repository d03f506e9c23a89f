"""Score.short_circuit_reason is returned to the source: rows written before it held a reason
code and a public message carried the moderator's note and the domain or address. Rewritten to
the public form (scoring.services.shortcircuit.PUBLIC_REASONS, copied: a migration does not
import code that may change)."""

from django.db import migrations

_PUBLIC = {
    "blocked domain": "blocked_domain: The post links to a domain on a block list.",
    "blocked IP": "blocked_ip: The post was sent from an address on a block list.",
}


def forwards(apps, schema_editor):
    Score = apps.get_model("scoring", "Score")
    for prefix, public in _PUBLIC.items():
        Score.objects.filter(short_circuit_reason__startswith=f"{prefix} ").update(short_circuit_reason=public)


class Migration(migrations.Migration):
    dependencies = [("scoring", "0010_webhook_delivery_without_post")]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
