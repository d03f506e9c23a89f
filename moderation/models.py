"""The moderation domain: who sends data (Source), who posts (Author), what is posted (Post,
Link, Domain, IpAddress), what others say about it (Report) and what moderators decide
(Decision, AuditLog). Writes go through moderation.services; reads shared by views and the
API through moderation.selectors."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone

from core.db_fields import RowJSONField
from core.webhook_targets import UnsafeWebhookTarget, webhook_target
from moderation.categories import category_label


class UnvalidatedLanguageAction(models.TextChoices):
    """What the policy does with a post in a language the text model was not validated on."""

    QUEUE = "queue", "Queue for review (never auto-approve)"
    SCORE = "score", "Decide on the score as for any post"


class UnfamiliarTextAction(models.TextChoices):
    """What the policy does with a post whose text is unlike what the text model learned from."""

    QUEUE = "queue", "Queue for review (never auto-approve or auto-remove on the text alone)"
    SCORE = "score", "Decide on the score as for any post"


class Source(models.Model):
    """A platform that pushes posts. Every other row hangs off one source."""

    name = models.CharField(max_length=120, unique=True)
    slug = models.SlugField(max_length=60, unique=True)
    is_active = models.BooleanField(default=True)
    callback_url = models.URLField(
        blank=True, help_text="Webhook for decisions (https, a public host); empty disables it."
    )
    webhook_secret = models.CharField(
        max_length=128, blank=True, help_text="HMAC-SHA256 key; required with a callback URL."
    )
    unvalidated_language_action = models.CharField(
        max_length=10,
        choices=UnvalidatedLanguageAction.choices,
        default=UnvalidatedLanguageAction.QUEUE,
        help_text="Posts in a language the text model was not validated on (settings.TEXT_VALIDATED_LANGUAGES).",
    )
    unfamiliar_text_action = models.CharField(
        max_length=10,
        choices=UnfamiliarTextAction.choices,
        default=UnfamiliarTextAction.QUEUE,
        db_default=UnfamiliarTextAction.QUEUE,
        help_text="Posts whose text is unlike what the text model learned from (the pipeline's familiarity measure).",
    )
    suspended_author_posts = models.CharField(
        max_length=10,
        choices=[("", "As the setting says"), ("queue", "Hold for review"), ("remove", "Remove")],
        blank=True,
        default="",
        help_text="What happens to a suspended author's new posts; empty follows SUSPENDED_AUTHOR_POSTS.",
    )
    # Retention (moderation.services.retention): rows older than these many days are deleted,
    # or anonymised where training data still needs them (docs/security.md, data lifecycle).
    retention_days_posts = models.PositiveIntegerField(
        default=365,
        validators=[MinValueValidator(1)],
        help_text="Days a post, with its decisions and appeals, is kept.",
    )
    retention_days_scores = models.PositiveIntegerField(
        default=365, validators=[MinValueValidator(1)], help_text="Days a score row is kept."
    )
    retention_days_reports = models.PositiveIntegerField(
        default=365, validators=[MinValueValidator(1)], help_text="Days a user report is kept."
    )
    retention_days_webhook_logs = models.PositiveIntegerField(
        default=30, validators=[MinValueValidator(1)], help_text="Days a finished webhook delivery is kept."
    )
    abuse_queue_threshold = models.FloatField(
        null=True,
        blank=True,
        validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
        help_text="Abuse score at which a post is never auto-approved; empty follows ABUSE_QUEUE_THRESHOLD.",
    )
    abuse_remove_threshold = models.FloatField(
        null=True,
        blank=True,
        validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
        help_text="Abuse score at which a post is removed; empty follows ABUSE_REMOVE_THRESHOLD.",
    )
    spot_check_rate = models.FloatField(
        null=True,
        blank=True,
        validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
        help_text="Share of automatic decisions a moderator is asked to confirm; empty follows SPOT_CHECK_RATE.",
    )
    # How far the models may approve on their own (scoring.services.earned_approval): 0, the
    # posts they are surest of; 1, the policy's full approve band. Raised by
    # scoring.services.approval_levels as the source's reviewed posts show the wider band safe, and
    # lowered there when the spot checks of an open step show it unsafe.
    approval_level = models.FloatField(
        default=0.0,
        db_default=0.0,
        validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
        help_text="How far the models may approve on their own: 0 only the surest posts, 1 the policy's full band. "
        "Raised automatically as reviewed posts show the wider band safe; lowered when spot checks show an open "
        "step unsafe.",
    )
    # When an admin last set approval_level by hand, or the spot checks lowered it: only posts
    # received since count as evidence for raising it again (or lowering it further), so a level
    # lowered after an incident stays down until new labels earn it.
    approval_level_set_at = models.DateTimeField(null=True, blank=True, editable=False)
    campaign_member_action = models.CharField(
        max_length=10,
        choices=[("queue", "Hold for review"), ("remove", "Remove")],
        default="queue",
        help_text="What happens to a new member of a campaign a moderator decided as spam.",
    )
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        """The callback URL is checked when saved through a form (admin) or create_source, and
        again at every delivery (scoring.services.webhooks): core.webhook_targets."""
        if not self.callback_url:
            return
        errors: dict[str, str] = {}
        try:
            webhook_target(self.callback_url, allow_private=settings.WEBHOOK_ALLOW_PRIVATE_TARGETS)
        except UnsafeWebhookTarget as exc:
            errors["callback_url"] = str(exc)
        if not self.webhook_secret:
            errors["webhook_secret"] = "Required with a callback URL: events are signed with it."  # noqa: S105
        if errors:
            raise ValidationError(errors)


class ApiScope(models.TextChoices):
    """What an API key may do. Chosen when the key is created; every endpoint requires one
    (api.permissions.HasScope)."""

    POSTS_WRITE = "posts:write", "Ingest posts"
    REPORTS_WRITE = "reports:write", "Send reports"
    AUTHORS_WRITE = "authors:write", "Update author profiles"
    BLOCKS_WRITE = "blocks:write", "Change this source's block lists"
    APPEALS_WRITE = "appeals:write", "Submit authors' appeals against decisions"
    AUTHORS_ERASE = "authors:erase", "Erase an author's personal data"
    NOTES_WRITE = "notes:write", "Add notes on this source's posts and authors"
    READ = "read", "Read posts, scores and this source's block lists"


ALL_SCOPES: tuple[str, ...] = tuple(ApiScope.values)


class ApiKey(models.Model):
    """An API key of one source. Only a SHA-256 hash is stored; the key is shown once."""

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=120)
    prefix = models.CharField(max_length=16, db_index=True, help_text="Public part, to identify the key.")
    hashed_key = models.CharField(max_length=128, unique=True)
    # A list of ApiScope values. Empty allows nothing: a key gets exactly what it was given.
    scopes = models.JSONField(default=list, blank=True, help_text="What this key may do (ApiScope values).")
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.source.slug}:{self.prefix}"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    def has_scope(self, scope: str) -> bool:
        return isinstance(self.scopes, list) and scope in self.scopes


class ListStatus(models.TextChoices):
    UNKNOWN = "unknown", "Unknown"
    ALLOW = "allow", "Allow"
    BLOCK = "block", "Block"


class Domain(models.Model):
    """A registrable domain (public-suffix aware: a.b.example.co.uk -> example.co.uk)."""

    name = models.CharField(max_length=253, unique=True)
    # The global status, set by moderators only (dashboard, admin). A source's own blocks are
    # SourceBlock rows and never change it.
    status = models.CharField(max_length=10, choices=ListStatus.choices, default=ListStatus.UNKNOWN)
    status_reason = models.CharField(max_length=255, blank=True, help_text="The moderator's note.")
    status_reason_code = models.CharField(max_length=64, blank=True)
    status_changed_at = models.DateTimeField(null=True, blank=True)
    # A block or allow entry stops applying at this time (checked when read:
    # moderation.enforcement_state); empty: until lifted.
    status_until = models.DateTimeField(null=True, blank=True)
    first_seen_at = models.DateTimeField(default=timezone.now)
    post_count = models.PositiveIntegerField(default=0)
    spam_count = models.PositiveIntegerField(default=0)
    report_count = models.PositiveIntegerField(default=0)

    class Meta:
        indexes = [models.Index(fields=["status"], name="domain_status_idx")]

    def __str__(self) -> str:
        return self.name


class Link(models.Model):
    """A normalized URL as posted (lower-cased host, no fragment, default port dropped)."""

    url = models.CharField(max_length=2048)
    url_hash = models.CharField(max_length=64, unique=True, help_text="SHA-256 of the normalized URL.")
    domain = models.ForeignKey(Domain, on_delete=models.PROTECT, related_name="links")
    host = models.CharField(max_length=253)
    first_seen_at = models.DateTimeField(default=timezone.now)
    post_count = models.PositiveIntegerField(default=0)
    report_count = models.PositiveIntegerField(default=0)

    def __str__(self) -> str:
        return self.url


class IpAddress(models.Model):
    address = models.GenericIPAddressField(unique=True)
    status = models.CharField(max_length=10, choices=ListStatus.choices, default=ListStatus.UNKNOWN)
    status_reason = models.CharField(max_length=255, blank=True, help_text="The moderator's note.")
    status_reason_code = models.CharField(max_length=64, blank=True)
    status_changed_at = models.DateTimeField(null=True, blank=True)
    # A block or allow entry stops applying at this time (checked when read:
    # moderation.enforcement_state); empty: until lifted.
    status_until = models.DateTimeField(null=True, blank=True)
    first_seen_at = models.DateTimeField(default=timezone.now)
    post_count = models.PositiveIntegerField(default=0)
    spam_count = models.PositiveIntegerField(default=0)

    class Meta:
        verbose_name = "IP address"
        verbose_name_plural = "IP addresses"
        indexes = [models.Index(fields=["status"], name="ip_status_idx")]

    def __str__(self) -> str:
        return self.address


class SourceLinkStats(models.Model):
    """One source's own history of a link: what the URL features read (scoring.features.extract).
    Counted per source so that one source's traffic never moves another source's scores; the
    Link row's counters are the all-sources view for the staff pages only."""

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="+", db_index=False)
    link = models.ForeignKey(Link, on_delete=models.CASCADE, related_name="source_stats")
    first_seen_at = models.DateTimeField(default=timezone.now)
    post_count = models.PositiveIntegerField(default=0)

    class Meta:
        verbose_name_plural = "source link stats"
        constraints = [models.UniqueConstraint(fields=["source", "link"], name="sourcelinkstats_uniq")]

    def __str__(self) -> str:
        return f"{self.source_id}:{self.link_id}: {self.post_count} posts"


class SourceDomainStats(models.Model):
    """One source's own history of a domain: domain_post_count, domain_report_count,
    domain_spam_rate, domain_age_hours and the local URL reputation read these, never the
    Domain row's all-sources counters (see SourceLinkStats). `report_count` counts a reporter
    once per post (moderation.services.reports)."""

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="+", db_index=False)
    domain = models.ForeignKey(Domain, on_delete=models.CASCADE, related_name="source_stats")
    first_seen_at = models.DateTimeField(default=timezone.now)
    post_count = models.PositiveIntegerField(default=0)
    spam_count = models.PositiveIntegerField(default=0)
    report_count = models.PositiveIntegerField(default=0)

    class Meta:
        verbose_name_plural = "source domain stats"
        constraints = [models.UniqueConstraint(fields=["source", "domain"], name="sourcedomainstats_uniq")]

    def __str__(self) -> str:
        return f"{self.source_id}:{self.domain_id}: {self.post_count} posts"


class SourceIpStats(models.Model):
    """One source's own history of an address: ip_post_count and ip_spam_rate read these (see
    SourceLinkStats)."""

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="+", db_index=False)
    ip = models.ForeignKey(IpAddress, on_delete=models.CASCADE, related_name="source_stats")
    first_seen_at = models.DateTimeField(default=timezone.now)
    post_count = models.PositiveIntegerField(default=0)
    spam_count = models.PositiveIntegerField(default=0)

    class Meta:
        verbose_name_plural = "source IP stats"
        constraints = [models.UniqueConstraint(fields=["source", "ip"], name="sourceipstats_uniq")]

    def __str__(self) -> str:
        return f"{self.source_id}:{self.ip_id}: {self.post_count} posts"


class BlockKind(models.TextChoices):
    DOMAIN = "domain", "Domain"
    IP = "ip", "IP address"


class SourceBlock(models.Model):
    """A block a source set through the API: it decides that source's own posts only and is
    visible to that source only. Global blocks are Domain/IpAddress.status, set by moderators.

    `value` is a registrable domain (never a public suffix) or one canonical IP address
    (moderation.services.blocklists checks both)."""

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="blocks")
    kind = models.CharField(max_length=6, choices=BlockKind.choices)
    value = models.CharField(max_length=253)
    reason = models.CharField(max_length=255, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            # Also the scoring load's index: one probe per post and kind (scoring.features.extract).
            models.UniqueConstraint(fields=["source", "kind", "value"], name="sourceblock_source_kind_value_uniq")
        ]

    def __str__(self) -> str:
        return f"{self.source_id}:{self.kind}:{self.value}"


class Author(models.Model):
    """A platform's user, per source. Profile updates are upserts on (source, external_id)."""

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="authors")
    external_id = models.CharField(max_length=255)
    username = models.CharField(max_length=255, blank=True)
    account_created_at = models.DateTimeField(null=True, blank=True)
    email_domain = models.CharField(max_length=253, blank=True)
    friends_count = models.PositiveIntegerField(default=0)
    followers_count = models.PositiveIntegerField(default=0)
    verified = models.BooleanField(default=False)
    # Platform-side counters as the platform reports them (user_posts, user_spam_posts,
    # user_spam_report in docs/design.md).
    platform_post_count = models.PositiveIntegerField(default=0)
    platform_spam_post_count = models.PositiveIntegerField(default=0)
    platform_spam_report_count = models.PositiveIntegerField(default=0)
    # Counters this service keeps from what it has seen and decided.
    post_count = models.PositiveIntegerField(default=0)
    spam_count = models.PositiveIntegerField(default=0)
    suspended_at = models.DateTimeField(null=True, blank=True)
    suspended_reason = models.CharField(max_length=255, blank=True, help_text="The moderator's note.")
    suspended_reason_code = models.CharField(max_length=64, blank=True)
    suspended_until = models.DateTimeField(null=True, blank=True, help_text="Empty: until lifted.")
    # A trusted author: the models never remove their posts automatically (a strong signal still
    # queues them for a human). moderation.enforcement_state reads both states with expiry.
    allowlisted_at = models.DateTimeField(null=True, blank=True)
    allowlisted_reason = models.CharField(max_length=255, blank=True)
    allowlisted_reason_code = models.CharField(max_length=64, blank=True)
    allowlisted_until = models.DateTimeField(null=True, blank=True)
    # Personal data erased on request (moderation.services.erasure): the row stays as a tombstone
    # so the posts' decisions and counters keep their meaning.
    erased_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["source", "external_id"], name="author_source_external_uniq")]

    def __str__(self) -> str:
        return self.username or self.external_id


class PostStatus(models.TextChoices):
    RECEIVED = "received", "Received"
    QUEUED = "queued", "Queued for review"
    AUTO_REMOVED = "auto_removed", "Removed automatically"
    AUTO_APPROVED = "auto_approved", "Approved automatically"
    REMOVED = "removed", "Removed by moderator"
    APPROVED = "approved", "Approved by moderator"


# The documented state machine. Scoring moves a post out of RECEIVED (or re-scores a
# scored one after a new report); moderators move any scored post to REMOVED/APPROVED and
# may reverse their own decision.
POST_TRANSITIONS: dict[str, frozenset[str]] = {
    PostStatus.RECEIVED: frozenset(
        {PostStatus.QUEUED, PostStatus.AUTO_REMOVED, PostStatus.AUTO_APPROVED, PostStatus.REMOVED, PostStatus.APPROVED}
    ),
    PostStatus.QUEUED: frozenset({PostStatus.AUTO_REMOVED, PostStatus.REMOVED, PostStatus.APPROVED, PostStatus.QUEUED}),
    PostStatus.AUTO_APPROVED: frozenset(
        {PostStatus.QUEUED, PostStatus.AUTO_REMOVED, PostStatus.REMOVED, PostStatus.APPROVED, PostStatus.AUTO_APPROVED}
    ),
    PostStatus.AUTO_REMOVED: frozenset({PostStatus.REMOVED, PostStatus.APPROVED, PostStatus.AUTO_REMOVED}),
    PostStatus.REMOVED: frozenset({PostStatus.APPROVED}),
    PostStatus.APPROVED: frozenset({PostStatus.REMOVED}),
}
PENDING_STATUSES = (PostStatus.RECEIVED, PostStatus.QUEUED)
# What a score can move a post to; REMOVED and APPROVED are a moderator's.
SCORING_STATUSES = frozenset({PostStatus.AUTO_REMOVED, PostStatus.QUEUED, PostStatus.AUTO_APPROVED})
# Statuses a (re-)score can still change. An auto-removed post can only stay auto-removed and a
# moderator's decision is final for the models, so a report on one is recorded but not re-scored.
RESCORABLE_STATUSES = frozenset(
    status for status, targets in POST_TRANSITIONS.items() if (targets - {status}) & SCORING_STATUSES
)


# Per drawn action (Post.spot_check_action), the status the post keeps until it is checked.
SPOT_CHECK_AWAITING = {"approve": PostStatus.AUTO_APPROVED, "remove": PostStatus.AUTO_REMOVED}
# Drawn for a spot check and still as the models left them (scoring.services.spot_checks): the
# dashboard's Spot checks tab, and the predicate of its partial index.
SPOT_CHECK_WAITING = Q(spot_check_action="approve", status=SPOT_CHECK_AWAITING["approve"]) | Q(
    spot_check_action="remove", status=SPOT_CHECK_AWAITING["remove"]
)


class Post(models.Model):
    # No single-column index on the hot foreign keys (source, author, link, ip): the unique
    # (source, external_id) and the (fk, received_at) indexes below lead with them and answer
    # the same lookups; each extra index was one more entry written per insert and per status
    # update (scoring moves `status`, which is indexed, so those updates are never HOT).
    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="posts", db_index=False)
    external_id = models.CharField(max_length=255)
    author = models.ForeignKey(Author, on_delete=models.PROTECT, related_name="posts", db_index=False)
    text = models.TextField(blank=True)
    # ISO 639-1 code detected at ingest (moderation.language), "und" when undetermined; empty
    # for posts stored before detection existed.
    language = models.CharField(max_length=8, blank=True, default="")
    url = models.CharField(max_length=2048, blank=True)
    link = models.ForeignKey(
        Link, null=True, blank=True, on_delete=models.PROTECT, related_name="posts", db_index=False
    )
    # What the link points at, as the platform saw it: spam often hides on the destination.
    preview_title = models.CharField(max_length=500, blank=True)
    preview_description = models.TextField(blank=True)
    preview_text = models.TextField(blank=True, help_text="Page text, OCR of images, video transcripts.")
    ip = models.ForeignKey(
        IpAddress, null=True, blank=True, on_delete=models.PROTECT, related_name="posts", db_index=False
    )
    # Ordered UI steps: [{"step": "open_composer", "at": "2026-...Z"}, ...]
    journey = RowJSONField(default=list, blank=True)
    share_count = models.PositiveIntegerField(default=0)
    comment_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(help_text="When the author posted it, platform clock.")
    content_hash = models.CharField(
        max_length=64, blank=True, default="", help_text="SHA-256 of the post's content (services.content_hash)."
    )
    received_at = models.DateTimeField(default=timezone.now, db_index=True)
    status = models.CharField(max_length=20, choices=PostStatus.choices, default=PostStatus.RECEIVED)
    status_changed_at = models.DateTimeField(default=timezone.now)
    # Denormalized from the latest Score and the reports so the queue sorts on indexed columns.
    final_score = models.FloatField(null=True, blank=True)
    # The abuse model's score of the latest Score (None: not scored, or no abuse model served).
    abuse_score = models.FloatField(null=True, blank=True)
    report_count = models.PositiveIntegerField(default=0)
    # The reports' weight: each report's reason severity times its reporter's track record
    # (moderation.services.priority). Rewritten when a report arrives or a decision is undone.
    report_weight = models.FloatField(default=0.0, db_default=0.0)
    # The queue's sort key, kept by moderation.services.priority on report, score and decision:
    # harm (score, report weight) minus received_at in SLA units, so ordering by it equals
    # ordering by "harm + time waited / SLA" at any moment without computing per row on read.
    priority = models.FloatField(default=0.0, db_default=0.0)
    model_version = models.CharField(max_length=120, blank=True)
    scored_at = models.DateTimeField(null=True, blank=True)
    # What the models did on their own at the post's first score ("approve" or "remove") when
    # that decision was drawn for a moderator to confirm; "" when it was not
    # (scoring.services.spot_checks). Kept after the check: the figures count the outcome.
    spot_check_action = models.CharField(max_length=10, blank=True, default="", db_default="")
    # Near-copies of this text in the same source (scoring.services.campaigns); empty when none.
    campaign = models.ForeignKey(
        "Campaign", null=True, blank=True, on_delete=models.SET_NULL, related_name="posts", db_index=False
    )
    # Claim/lock for the review queue.
    claimed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    claimed_until = models.DateTimeField(null=True, blank=True)
    # Ownership (moderation.services.assignment): the moderator responsible for the item, or the
    # specialist queue it waits in; both empty is unassigned. Unlike the claim it does not
    # expire: it ends when the post is decided or someone unassigns it.
    assigned_to = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+", db_index=False
    )
    assigned_queue = models.ForeignKey(
        "SpecialistQueue", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", db_index=False
    )
    assigned_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["source", "external_id"], name="post_source_external_uniq")]
        indexes = [
            # The review queue: pending posts by risk, then reports, then age (keyset pagination).
            models.Index(
                fields=["-final_score", "-report_count", "received_at", "id"],
                name="post_queue_idx",
                condition=Q(status="queued"),
            ),
            # The review queue by priority (the default sort) and the Reported view.
            models.Index(fields=["-priority", "id"], name="post_priority_idx", condition=Q(status="queued")),
            models.Index(fields=["-report_weight", "id"], name="post_reported_idx", condition=Q(report_count__gt=0)),
            # The sweeper: posts stuck in RECEIVED.
            models.Index(fields=["received_at"], name="post_received_idx", condition=Q(status="received")),
            models.Index(fields=["status", "received_at"], name="post_status_received_idx"),
            models.Index(fields=["author", "received_at"], name="post_author_idx"),
            models.Index(fields=["link", "received_at"], name="post_link_idx"),
            models.Index(fields=["ip", "received_at"], name="post_ip_idx"),
            # The "mine" and specialist-queue views of the queue, in priority order; partial, so
            # an unassigned post pays no entry.
            models.Index(
                fields=["assigned_to", "-priority", "id"],
                name="post_assignee_idx",
                condition=Q(status="queued", assigned_to__isnull=False),
            ),
            models.Index(
                fields=["assigned_queue", "-priority", "id"],
                name="post_assigned_queue_idx",
                condition=Q(status="queued", assigned_queue__isnull=False),
            ),
            # The Spot checks tab: drawn posts still as the models left them. Partial: a
            # moderator's decision moves the status and takes the post out of it.
            models.Index(
                fields=["received_at", "id"],
                name="post_spot_check_waiting_idx",
                condition=SPOT_CHECK_WAITING,
            ),
            # The spot-check figures over a window, every source's (the metrics page) or one's
            # (the API); only drawn posts pay an entry.
            models.Index(fields=["received_at"], name="post_spot_check_idx", condition=~Q(spot_check_action="")),
            models.Index(
                fields=["source", "received_at"], name="post_spot_check_source_idx", condition=~Q(spot_check_action="")
            ),
            # Partial: most posts belong to no campaign and pay no index entry for it.
            models.Index(
                fields=["campaign", "received_at"], name="post_campaign_idx", condition=Q(campaign__isnull=False)
            ),
            # One source's ended posts over a window (the earned approval's evidence,
            # scoring.services.approval_levels); approved-automatically and waiting posts, the
            # bulk, pay no entry.
            models.Index(
                fields=["source", "received_at"],
                name="post_ended_source_idx",
                condition=Q(status__in=["approved", "removed", "auto_removed"]),
            ),
            # One source's ended spot checks of automatic approvals over a window (what can lower
            # an earned approval level, every few minutes): as many rows as moderators checked.
            models.Index(
                fields=["source", "received_at"],
                name="post_approval_checks_idx",
                condition=Q(spot_check_action="approve", status__in=["approved", "removed", "auto_removed"]),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.source_id}:{self.external_id}"

    @property
    def category_scores(self) -> dict[str, float | None]:
        """The latest score per harm category, as the API and the webhook show them."""
        return {"spam": self.final_score, "abuse": self.abuse_score}


class Report(models.Model):
    """A platform user's complaint about a post."""

    post = models.ForeignKey(Post, on_delete=models.CASCADE, related_name="reports")
    reporter_id = models.CharField(max_length=255)
    reason = models.CharField(max_length=64)
    # moderation.categories: from the reason when the platform sends none.
    category = models.CharField(max_length=32, blank=True, default="")
    details = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["post", "reporter_id", "reason"], name="report_post_reporter_reason_uniq")
        ]
        indexes = [models.Index(fields=["post", "created_at"], name="report_post_idx")]

    def __str__(self) -> str:
        return f"{self.reason} by {self.reporter_id}"


class Label(models.TextChoices):
    SPAM = "spam", "Spam"
    HAM = "ham", "Not spam"


class ReporterRecord(models.Model):
    """How often a platform user's reports were upheld (the post removed) or rejected (approved)
    by a moderator; a reporter with a record of upheld reports weighs more in queue priority."""

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="+", db_index=False)
    reporter_id = models.CharField(max_length=255)
    upheld = models.PositiveIntegerField(default=0)
    rejected = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["source", "reporter_id"], name="reporter_record_uniq")]

    def __str__(self) -> str:
        return f"{self.reporter_id}: {self.upheld} upheld, {self.rejected} rejected"


class ReasonCode(models.Model):
    """The configurable list of reasons a moderator picks from."""

    code = models.SlugField(max_length=64, unique=True)
    label = models.CharField(max_length=120)
    applies_to = models.CharField(max_length=4, choices=Label.choices)
    # moderation.categories: the harm a decision with this reason is about ("none" for approvals).
    category = models.CharField(max_length=32, blank=True, default="")
    is_active = models.BooleanField(default=True)
    ordering = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["ordering", "code"]

    def __str__(self) -> str:
        return self.label


class Decision(models.Model):
    """A moderator's label on a post. Append-only: a new decision supersedes, never edits."""

    post = models.ForeignKey(Post, on_delete=models.CASCADE, related_name="decisions")
    moderator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="decisions")
    label = models.CharField(max_length=4, choices=Label.choices)
    reason_code = models.CharField(max_length=64, blank=True)
    # moderation.categories: the reason code's category, else the label's (spam or none). Only
    # the models of this category learn from the decision (feedback.selectors).
    category = models.CharField(max_length=32, blank=True, default="")
    note = models.TextField(blank=True)
    bulk_action = models.ForeignKey(
        "BulkAction", null=True, blank=True, on_delete=models.SET_NULL, related_name="decisions"
    )
    # The post's status before this decision, so a single decision can be undone.
    previous_status = models.CharField(max_length=20, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    undone_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["post", "created_at"], name="decision_post_idx"),
            models.Index(fields=["moderator", "created_at"], name="decision_moderator_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.label} on post {self.post_id}"


class BulkAction(models.Model):
    """One moderator action over many posts, kept so it can be undone for a short time."""

    moderator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    label = models.CharField(max_length=4, choices=Label.choices)
    scope = models.JSONField(default=dict, help_text="What was selected: ids or a cluster filter.")
    previous_statuses = models.JSONField(default=dict, help_text="post id -> status before the action.")
    created_at = models.DateTimeField(default=timezone.now)
    undone_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"bulk {self.label} #{self.pk}"


class Campaign(models.Model):
    """Near-copies of one text within one source, whatever accounts, domains and IPs posted them
    (found at scoring time: scoring.services.campaigns). A campaign never spans sources. The
    counters move by the members that join (moderation.services.campaigns)."""

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="campaigns", db_index=False)
    first_seen_at = models.DateTimeField(default=timezone.now)
    last_seen_at = models.DateTimeField(default=timezone.now)
    member_count = models.PositiveIntegerField(default=0)
    author_count = models.PositiveIntegerField(default=0)
    # A moderator's decision on the whole campaign (moderation.services.bulk with the campaign
    # cluster); new members then follow the source's campaign_member_action.
    decided_label = models.CharField(max_length=4, choices=Label.choices, blank=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    # Indexed: undoing any bulk action looks for the campaign it decided.
    decided_bulk = models.ForeignKey(BulkAction, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        indexes = [models.Index(fields=["source", "-last_seen_at"], name="campaign_source_seen_idx")]

    def __str__(self) -> str:
        return f"campaign #{self.pk}"


class AuditLog(models.Model):
    """Every moderator and admin action: who, what, when, before/after."""

    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    action = models.CharField(max_length=64, db_index=True)
    target_type = models.CharField(max_length=64)
    target_id = models.CharField(max_length=64)
    before = models.JSONField(default=dict, blank=True)
    after = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        indexes = [models.Index(fields=["target_type", "target_id"], name="audit_target_idx")]

    def __str__(self) -> str:
        return f"{self.action} {self.target_type}:{self.target_id}"


class SpecialistQueue(models.Model):
    """A queue of one policy category's posts for the moderators trained on it (hate-speech
    specialists, say). Admins set it up; `auto_route` sends a post whose top category is this
    one here when it enters the review queue (moderation.services.assignment)."""

    category = models.CharField(max_length=32, unique=True)  # moderation.categories: plain codes
    name = models.CharField(max_length=120)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="specialist_queues")
    auto_route = models.BooleanField(
        default=True, help_text="Send posts whose top category is this one here when they are queued."
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def category_label(self) -> str:
        return category_label(self.category)


class Note(models.Model):
    """A moderator's note on an author, or on one of the author's posts: context for the next
    moderator, not a decision (moderation.services.notes). A note on a post also names the
    post's author, so erasing the author finds every note about them."""

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="+", db_index=False)
    author = models.ForeignKey(Author, on_delete=models.CASCADE, related_name="notes")
    post = models.ForeignKey(Post, null=True, blank=True, on_delete=models.CASCADE, related_name="notes")
    text = models.TextField()
    # Empty for a note the platform sent through the API (`via` says which source's key).
    written_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    via = models.CharField(max_length=80, default="dashboard")
    created_at = models.DateTimeField(default=timezone.now)
    edited_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["post", "-created_at"], name="note_post_idx", condition=Q(post__isnull=False))]

    def __str__(self) -> str:
        target = f"post {self.post_id}" if self.post_id else f"author {self.author_id}"
        return f"note #{self.pk} on {target}"


class AppealStatus(models.TextChoices):
    PENDING = "pending", "Waiting for review"
    UPHELD = "upheld", "Decision upheld"
    OVERTURNED = "overturned", "Decision overturned"


class Appeal(models.Model):
    """An author's appeal against a decision on their post, sent by the platform. A moderator
    other than the one who decided upholds or overturns it (moderation.services.appeals)."""

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="+", db_index=False)
    post = models.ForeignKey(Post, on_delete=models.CASCADE, related_name="appeals")
    # The moderator's decision appealed against; empty when the post's status was automatic.
    decision = models.ForeignKey(Decision, null=True, blank=True, on_delete=models.SET_NULL, related_name="appeals")
    appealed_status = models.CharField(max_length=20, choices=PostStatus.choices)
    statement = models.TextField(blank=True, help_text="The author's statement, as the platform sent it.")
    status = models.CharField(max_length=12, choices=AppealStatus.choices, default=AppealStatus.PENDING)
    created_at = models.DateTimeField(default=timezone.now)
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolution_reason_code = models.CharField(max_length=64, blank=True)
    resolution_note = models.TextField(blank=True)

    class Meta:
        constraints = [
            # One open appeal per post: the platform sending it again gets the same one back.
            models.UniqueConstraint(fields=["post"], condition=Q(status="pending"), name="appeal_one_pending_per_post")
        ]
        indexes = [models.Index(fields=["status", "created_at"], name="appeal_status_idx")]

    def __str__(self) -> str:
        return f"appeal #{self.pk} on post {self.post_id}"


# --- proportionate actions: strikes, the escalation ladder, restrictions, statements ------------


class Strike(models.Model):
    """A warning on an author's record in one category. It counts towards the category's
    escalation ladder until it expires or is revoked (moderation.services.strikes)."""

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="+", db_index=False)
    author = models.ForeignKey(Author, on_delete=models.CASCADE, related_name="strikes", db_index=False)
    post = models.ForeignKey(Post, null=True, blank=True, on_delete=models.SET_NULL, related_name="strikes")
    category = models.CharField(max_length=32)  # moderation.categories: plain codes, the list is configurable
    reason_code = models.CharField(max_length=64)
    note = models.CharField(max_length=255, blank=True)
    issued_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["author", "category", "created_at"], name="strike_author_category_idx")]

    def __str__(self) -> str:
        return f"{self.category_label} strike #{self.pk}"

    @property
    def category_label(self) -> str:
        return category_label(self.category)


class LadderAction(models.TextChoices):
    LIMIT_RATE = "limit_rate", "Limit posting rate"
    LIMIT_REACH = "limit_reach", "Limit reach"
    SUSPEND = "suspend", "Suspend"


class LadderRule(models.Model):
    """One rung of a source's escalation ladder in a category: `strikes` live strikes within
    `window_days` lead to `action` for `duration_days` (empty: until lifted). Admins edit them;
    moderation.services.ladder applies them when a strike is recorded."""

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="ladder_rules", db_index=False)
    category = models.CharField(max_length=32)  # moderation.categories: plain codes, the list is configurable
    strikes = models.PositiveSmallIntegerField()
    window_days = models.PositiveSmallIntegerField(default=30)
    action = models.CharField(max_length=16, choices=LadderAction.choices)
    duration_days = models.PositiveSmallIntegerField(null=True, blank=True, help_text="Empty: until lifted.")
    is_active = models.BooleanField(default=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["source", "category", "strikes"], name="ladder_rule_source_category_uniq"),
            models.CheckConstraint(condition=Q(strikes__gte=1), name="ladder_rule_strikes_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.category}: {self.strikes} strikes in {self.window_days} days -> {self.action}"

    @property
    def category_label(self) -> str:
        return category_label(self.category)


class RestrictionKind(models.TextChoices):
    HIDE = "hide", "Hidden pending review"
    LIMIT_RATE = "limit_rate", "Posting rate limited"
    LIMIT_REACH = "limit_reach", "Reach limited"


class Restriction(models.Model):
    """A restriction the platform applies on our word: a post hidden pending review, or an
    author's rate or reach limited. Lifted, never deleted (moderation.services.sanctions)."""

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="+", db_index=False)
    author = models.ForeignKey(Author, on_delete=models.CASCADE, related_name="restrictions")
    post = models.ForeignKey(Post, null=True, blank=True, on_delete=models.CASCADE, related_name="restrictions")
    kind = models.CharField(max_length=16, choices=RestrictionKind.choices)
    category = models.CharField(max_length=32)  # moderation.categories: plain codes, the list is configurable
    reason_code = models.CharField(max_length=64)
    note = models.CharField(max_length=255, blank=True)
    imposed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    ends_at = models.DateTimeField(null=True, blank=True, help_text="Empty: until lifted.")
    lifted_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        target = f"post {self.post_id}" if self.post_id else f"author {self.author_id}"
        return f"{self.get_kind_display()} ({target})"


class StatementOfReasons(models.Model):
    """What the platform tells the affected author about a restriction, in the fields of the
    EU DSA transparency database (docs/statements-of-reasons.md). `fields` is the statement as
    submitted; the columns beside it are what the transparency report counts by."""

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="+", db_index=False)
    author = models.ForeignKey(Author, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    post = models.ForeignKey(Post, null=True, blank=True, on_delete=models.CASCADE, related_name="statements")
    decision = models.OneToOneField(Decision, null=True, blank=True, on_delete=models.CASCADE, related_name="statement")
    restriction = models.OneToOneField(
        Restriction, null=True, blank=True, on_delete=models.CASCADE, related_name="statement"
    )
    action = models.CharField(max_length=16)
    category = models.CharField(max_length=32)  # moderation.categories: plain codes, the list is configurable
    automated = models.BooleanField(default=False)
    content_date = models.DateTimeField(null=True, blank=True)
    application_date = models.DateTimeField(default=timezone.now)
    fields = models.JSONField(default=dict)
    created_at = models.DateTimeField(default=timezone.now)
    # The restriction was reversed (undone, lifted, overturned); the statement stays as issued.
    reversed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "statements of reasons"
        indexes = [models.Index(fields=["source", "application_date"], name="sor_source_applied_idx")]

    def __str__(self) -> str:
        return f"statement #{self.pk} ({self.action})"
