"""Backup and restore drill: back up the database, the Triton model repository and the training
artifacts; restore them into a new database and new folders; show that the product comes up on
the copy and serves the same posts, scores and models.

    DJANGO_SETTINGS_MODULE=config.settings.production \\
        python scripts/backup_restore_drill.py --workdir /backups/drill-$(date +%F)

Steps (docs/deploy.md, "Backup and restore"):
1. Backup. One REPEATABLE READ snapshot is exported (pg_export_snapshot) and held: `pg_dump
   --snapshot` dumps exactly it while the drill fingerprints its tables (row count and an MD5
   of every row in id order) and samples posts in the same snapshot, so the comparison holds
   on a database that takes writes meanwhile. The model repository (TRITON_MODEL_REPOSITORY)
   and the artifacts (ARTIFACTS_DIR) are archived with tar, and every file's SHA-256 noted.
   workdir/ then holds database.dump, model-repository.tar.gz, artifacts.tar.gz and
   manifest.json: that set is the backup.
2. Restore. A new database (--restore-db; an existing one is refused, never overwritten) on the
   same server, `pg_restore --exit-on-error`; the archives are unpacked under workdir/restore/.
3. Verify. The restored tables' fingerprints and files' hashes must equal the manifest's. Then
   the product runs against the copy, in child processes with DATABASE_URL,
   TRITON_MODEL_REPOSITORY and ARTIFACTS_DIR pointing at it: `manage.py check`, `manage.py
   migrate --check` (no migration missing), and a GET /api/v1/posts/<id> of each sampled post
   through Django's request handling with an API key made in the copy, whose status and score
   must be the backup's; the production model versions of the registry must be the versions
   the restored repository serves.
4. The restored database is dropped at the end (it is the drill's own) unless --keep.

Prints a JSON report and exits 0 when every check passed, 1 otherwise. Needs pg_dump,
pg_restore and tar of the server's major version on PATH. A database on another server:
restore with the same commands (pg_restore -d <that database> database.dump).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any
from urllib.parse import quote

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

# Tables whose rows must come back identical; every other table is restored by the same dump.
TABLES = (
    "moderation_source",
    "moderation_author",
    "moderation_post",
    "moderation_report",
    "moderation_decision",
    "moderation_auditlog",
    "scoring_score",
    "scoring_webhookdelivery",
    "scoring_decisionpolicy",
    "feedback_labelledexample",
    "feedback_datasetversion",
    "feedback_modelversion",
)
SAMPLE_POSTS = 5


# --- the database -------------------------------------------------------------------------
def db_settings() -> dict[str, Any]:
    from django.conf import settings

    db = dict(settings.DATABASES["default"])
    if db["ENGINE"] != "django.db.backends.postgresql":
        raise SystemExit("the drill needs PostgreSQL (DATABASE_URL=postgres://...)")
    return db


def connect(db: dict[str, Any], name: str | None = None, **kwargs: Any) -> Any:
    import psycopg

    return psycopg.connect(
        host=db["HOST"] or "127.0.0.1",
        port=db["PORT"] or 5432,
        user=db["USER"],
        password=db["PASSWORD"] or None,
        dbname=name or db["NAME"],
        **kwargs,
    )


def pg_env(db: dict[str, Any]) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"PGHOST": str(db["HOST"] or "127.0.0.1"), "PGPORT": str(db["PORT"] or 5432), "PGUSER": db["USER"]})
    if db["PASSWORD"]:
        env["PGPASSWORD"] = db["PASSWORD"]
    return env


def database_url(db: dict[str, Any], name: str) -> str:
    auth = quote(db["USER"], safe="") + (f":{quote(db['PASSWORD'], safe='')}" if db["PASSWORD"] else "")
    return f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{name}"


def fingerprints(conn: Any) -> dict[str, list[Any]]:
    """table -> [row count, MD5 over every row's text in id order]."""
    out: dict[str, list[Any]] = {}
    for table in TABLES:
        count, digest = conn.execute(
            f"SELECT count(*), coalesce(md5(string_agg(md5(t::text), '' ORDER BY t.id)), '') FROM {table} t"  # noqa: S608
        ).fetchone()
        out[table] = [count, digest]
    return out


def sample_posts(conn: Any) -> list[dict[str, Any]]:
    rows = conn.execute(
        "SELECT s.slug, p.external_id, p.status, p.final_score FROM moderation_post p "
        "JOIN moderation_source s ON s.id = p.source_id ORDER BY p.id DESC LIMIT %s",
        [SAMPLE_POSTS],
    ).fetchall()
    return [{"source": r[0], "external_id": r[1], "status": r[2], "final_score": r[3]} for r in rows]


# --- files --------------------------------------------------------------------------------
def tree_hashes(root: Path) -> dict[str, str]:
    if not root.is_dir():
        return {}
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file() and not path.is_symlink()
    }


def archive(root: Path, target: Path) -> None:
    with tarfile.open(target, "w:gz") as tar:
        if root.is_dir():
            tar.add(root, arcname=".")


def unpack(source: Path, root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    with tarfile.open(source, "r:gz") as tar:
        tar.extractall(root, filter="data")


# --- the steps ----------------------------------------------------------------------------
def backup(workdir: Path) -> dict[str, Any]:
    from django.conf import settings

    db = db_settings()
    workdir.mkdir(parents=True, exist_ok=True)
    dump = workdir / "database.dump"
    with connect(db) as conn:
        conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        (snapshot,) = conn.execute("SELECT pg_export_snapshot()").fetchone()
        subprocess.run(
            ["pg_dump", "--format=custom", "--no-owner", f"--snapshot={snapshot}", f"--file={dump}", db["NAME"]],
            env=pg_env(db),
            check=True,
        )
        tables, posts = fingerprints(conn), sample_posts(conn)
        conn.execute("COMMIT")
    models, artifacts = Path(settings.TRITON_MODEL_REPOSITORY), Path(settings.ARTIFACTS_DIR)
    archive(models, workdir / "model-repository.tar.gz")
    archive(artifacts, workdir / "artifacts.tar.gz")
    manifest = {
        "database": db["NAME"],
        "tables": tables,
        "posts": posts,
        "model_repository": tree_hashes(models),
        "artifacts": tree_hashes(artifacts),
        "files": {
            name: hashlib.sha256((workdir / name).read_bytes()).hexdigest()
            for name in ("database.dump", "model-repository.tar.gz", "artifacts.tar.gz")
        },
    }
    (workdir / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True))
    return manifest


def restore(workdir: Path, name: str) -> tuple[Path, Path]:
    from psycopg import sql

    db = db_settings()
    with connect(db, "postgres", autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            raise SystemExit(f"database {name!r} exists: the drill restores into a new database only")
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    subprocess.run(
        ["pg_restore", "--no-owner", "--exit-on-error", f"--dbname={name}", str(workdir / "database.dump")],
        env=pg_env(db),
        check=True,
    )
    models, artifacts = workdir / "restore" / "model-repository", workdir / "restore" / "artifacts"
    unpack(workdir / "model-repository.tar.gz", models)
    unpack(workdir / "artifacts.tar.gz", artifacts)
    return models, artifacts


def drop(name: str) -> None:
    from psycopg import sql

    with connect(db_settings(), "postgres", autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(name)))


def verify(workdir: Path, manifest: dict[str, Any], name: str, models: Path, artifacts: Path) -> dict[str, Any]:
    db = db_settings()
    with connect(db, name) as conn:
        tables = fingerprints(conn)
    checks: dict[str, Any] = {
        "tables": tables == manifest["tables"],
        "model_repository": tree_hashes(models) == manifest["model_repository"],
        "artifacts": tree_hashes(artifacts) == manifest["artifacts"],
    }
    env = {
        **os.environ,
        "DATABASE_URL": database_url(db, name),
        "TRITON_MODEL_REPOSITORY": str(models),
        "ARTIFACTS_DIR": str(artifacts),
    }
    manage = [sys.executable, str(ROOT / "manage.py")]
    for label, argv in (("django_check", ["check"]), ("migrations_applied", ["migrate", "--check", "--plan"])):
        done = subprocess.run([*manage, *argv], env=env, capture_output=True, text=True, check=False)
        checks[label] = done.returncode == 0
        if done.returncode:
            checks[f"{label}_output"] = (done.stdout + done.stderr)[-2000:]
    served = subprocess.run(
        [sys.executable, __file__, "serve-check", str(workdir / "manifest.json")],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    try:
        checks["serves"] = json.loads(served.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        checks["serves"] = {"ok": False, "output": (served.stdout + served.stderr)[-2000:]}
    if manifest["tables"] != tables:
        checks["tables_differ"] = sorted(t for t in TABLES if tables.get(t) != manifest["tables"].get(t))
    return checks


def serve_check(manifest_path: Path) -> dict[str, Any]:
    """In the restored environment: the API serves the sampled posts as they were backed up,
    and the registry's production versions are what the restored repository serves."""
    from django.conf import settings
    from django.test import Client

    from feedback.models import ModelVersion
    from feedback.services.promotion import MEMBERS, served_version
    from moderation.models import ApiScope, Source
    from moderation.services.api_keys import api_key_create

    manifest = json.loads(manifest_path.read_text())
    host = next((h for h in settings.ALLOWED_HOSTS if h not in ("*",) and not h.startswith(".")), "localhost")
    client = Client(HTTP_HOST=host)
    keys: dict[str, str] = {}
    posts = []
    for sample in manifest["posts"]:
        if sample["source"] not in keys:
            source = Source.objects.get(slug=sample["source"])
            _, keys[sample["source"]] = api_key_create(source=source, name="restore drill", scopes=[ApiScope.READ])
        response = client.get(
            f"/api/v1/posts/{quote(sample['external_id'], safe='')}",
            secure=True,
            HTTP_AUTHORIZATION=f"Api-Key {keys[sample['source']]}",
        )
        body = response.json() if response.status_code == 200 else {}
        posts.append(
            response.status_code == 200
            and body.get("status") == sample["status"]
            and body.get("final_score") == sample["final_score"]
        )
    models = {}
    for version in ModelVersion.objects.filter(is_production=True):
        models[version.name] = all(
            served_version(member) == int(version.triton_versions.get(member, -1)) for member in MEMBERS[version.name]
        )
    return {"ok": all(posts) and all(models.values()), "posts": posts, "models": models}


def main(argv: list[str] | None = None) -> int:
    import django

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command")
    check = sub.add_parser("serve-check")
    check.add_argument("manifest", type=Path)
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--restore-db", help="name of the new database (default: <database>_restore_drill)")
    parser.add_argument("--keep", action="store_true", help="keep the restored database and folders")
    args = parser.parse_args(argv)
    django.setup()
    if args.command == "serve-check":
        print(json.dumps(serve_check(args.manifest)))
        return 0
    if args.workdir is None:
        parser.error("--workdir is required")
    manifest = backup(args.workdir)
    name = args.restore_db or f"{manifest['database']}_restore_drill"
    models, artifacts = restore(args.workdir, name)
    try:
        checks = verify(args.workdir, manifest, name, models, artifacts)
    finally:
        if not args.keep:
            drop(name)
    ok = all(checks[k] for k in ("tables", "model_repository", "artifacts", "django_check", "migrations_applied"))
    ok = ok and bool(checks["serves"].get("ok"))
    report = {
        "ok": ok,
        "restored_database": name,
        "kept": args.keep,
        "rows": {t: c for t, (c, _) in manifest["tables"].items()},
        "model_files": len(manifest["model_repository"]),
        "artifact_files": len(manifest["artifacts"]),
        "checks": checks,
    }
    print(json.dumps(report, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
