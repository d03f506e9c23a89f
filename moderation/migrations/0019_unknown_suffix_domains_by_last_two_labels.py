"""Data: a host under a suffix the public list does not know (`login.evil.example`) now belongs
to the registrable domain of its last two labels (`evil.example`), so a block of that domain
covers every subdomain. Links recorded under the old per-host Domain rows move to the two-label
row (created when missing); the old rows stay, with their counters, and decide nothing new."""

from django.db import migrations


def forwards(apps, schema_editor):
    # The live normalisation (tldextract's bundled list), the same one ingest applies.
    from core.urls import InvalidUrl, registrable_domain

    Domain = apps.get_model("moderation", "Domain")
    Link = apps.get_model("moderation", "Link")
    for domain in Domain.objects.filter(name__regex=r"\..+\.").iterator():
        try:
            target_name = registrable_domain(domain.name)
        except InvalidUrl:
            continue
        if target_name == domain.name:
            continue
        target, _ = Domain.objects.get_or_create(name=target_name)
        Link.objects.filter(domain_id=domain.pk).update(domain_id=target.pk)


class Migration(migrations.Migration):
    dependencies = [("moderation", "0018_enforcement_reason_expiry_allowlist")]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
