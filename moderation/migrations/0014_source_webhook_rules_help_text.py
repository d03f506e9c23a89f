"""Help texts only: the callback URL's rules and the required secret, as the admin shows them."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("moderation", "0013_admin_role_cannot_edit_groups"),
    ]

    operations = [
        migrations.AlterField(
            model_name="source",
            name="callback_url",
            field=models.URLField(
                blank=True, help_text="Webhook for decisions (https, a public host); empty disables it."
            ),
        ),
        migrations.AlterField(
            model_name="source",
            name="webhook_secret",
            field=models.CharField(
                blank=True, help_text="HMAC-SHA256 key; required with a callback URL.", max_length=128
            ),
        ),
    ]
