"""core.sql_rows builds instances as the ORM does: the same attribute values, loaded state and
behaviour (related access, save) as a queryset's, and a model something listens to at init
still gets its pre_init/post_init signals."""

from __future__ import annotations

import pytest
from django.db.models import Model
from django.db.models.signals import post_init

from core import sql_rows
from moderation.models import Author, Domain, IpAddress, Link, Post, Source
from tests.scoring.pipeline_support import make_author, make_ip, make_link, make_post, make_source

pytestmark = pytest.mark.django_db


def _same(built, loaded) -> None:
    names = [f.attname for f in type(loaded)._meta.concrete_fields]
    assert {n: getattr(built, n) for n in names} == {n: getattr(loaded, n) for n in names}
    assert (built._state.adding, built._state.db) == (False, loaded._state.db)
    assert built.get_deferred_fields() == set()


def test_instances_equal_the_orms():
    source = make_source()
    link = make_link()
    post = make_post(source=source, author=make_author(source), link=link, ip=make_ip())
    cases: list[tuple[type[Model], object]] = [
        (Post, post.pk),
        (Source, source.pk),
        (Author, post.author_id),
        (Link, link.pk),
        (Domain, link.domain_id),
        (IpAddress, post.ip_id),
    ]
    for model, pk in cases:
        built = sql_rows.select_first(model, where="t.id = %s", params=[pk])
        _same(built, model._default_manager.get(pk=pk))


def test_the_scoring_loads_other_rows_equal_the_orms():
    from moderation.models import Campaign, SourceDomainStats, SourceIpStats, SourceLinkStats
    from scoring.models import DecisionPolicy
    from scoring.services.policy import policy_active

    source = make_source()
    link, ip = make_link(), make_ip()
    make_post(source=source, link=link, ip=ip)
    rows: list[Model] = [
        Campaign.objects.create(source=source),
        SourceLinkStats.objects.get_or_create(source=source, link=link)[0],
        SourceDomainStats.objects.get_or_create(source=source, domain_id=link.domain_id)[0],
        SourceIpStats.objects.get_or_create(source=source, ip=ip)[0],
        policy_active(),
    ]
    for row in rows:
        model = type(row)
        built = sql_rows.select_first(model, where="t.id = %s", params=[row.pk])
        _same(built, model._default_manager.get(pk=row.pk))
    assert isinstance(rows[-1], DecisionPolicy)


def test_a_model_with_its_own_from_db_goes_through_it():
    post = make_post()
    calls: list[int] = []
    inherited = Model.from_db.__func__  # type: ignore[attr-defined]

    def tracking(cls, db, field_names, values):
        calls.append(len(values))
        return inherited(cls, db, field_names, values)

    Post.from_db = classmethod(tracking)  # type: ignore[method-assign, assignment]
    try:
        sql_rows.select_first(Post, where="t.id = %s", params=[post.pk])
    finally:
        del Post.from_db  # back to Model's
    assert calls == [len(Post._meta.concrete_fields)]


def test_an_instance_behaves_as_a_loaded_one():
    post = make_post(text="hello")
    built = sql_rows.select_first(Post, where="t.id = %s", params=[post.pk])
    assert built is not None
    assert built.author.pk == post.author_id  # related access loads the row
    built.text = "changed"
    built.save(update_fields=["text"])  # an UPDATE, not an INSERT: the state says loaded
    assert Post.objects.get(pk=post.pk).text == "changed"
    assert Post.objects.count() == 1


def test_a_model_with_an_init_listener_still_gets_its_signal():
    post = make_post()
    seen: list[int] = []

    def listener(sender, instance, **kwargs):
        seen.append(instance.pk)

    post_init.connect(listener, sender=Post)
    try:
        built = sql_rows.select_first(Post, where="t.id = %s", params=[post.pk])
    finally:
        post_init.disconnect(listener, sender=Post)
    assert seen == [post.pk]
    _same(built, Post.objects.get(pk=post.pk))
