"""Objects under an S3 prefix as a knowledge base's source, fetched into ``.holodeck/sources/``.

boto3 (the extra ``holodeck[s3]``) lists the prefix and downloads what changed: an object
whose ETag is the one stored beside the files (``state.json``) is not downloaded again, and
its file keeps its mtime, so the ingest finds it unchanged. An object gone from the prefix
loses its file (and so its chunks). Credentials, region and endpoint come from boto3's
standard chain (``AWS_*`` variables, ``~/.aws``, an instance or container role), so nothing
of them is in agent.yaml. A bucket that cannot be listed keeps the last copy, with one
warning; with no copy, one line and exit 2.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path, PurePosixPath
from typing import Any

from holodeck.config.loader import SOURCES_DIR, ResolvedTool
from holodeck.config.vectorstore_tool import S3Source
from holodeck.errors import ConfigError
from holodeck.extras import require
from holodeck.redact import redact

log = logging.getLogger("holodeck.ingest")


class S3Files:
    """One tool's S3 objects: download what changed, keep what did not, drop what is gone."""

    def __init__(self, spec: S3Source, tool: str, folder: Path) -> None:
        self.spec = spec
        self.tool = tool
        self.folder = folder
        self.state_file = folder.parent / "state.json"
        bucket, _, prefix = spec.s3[5:].partition("/")
        self.bucket, self.prefix = bucket, prefix

    @classmethod
    def of(cls, tool: ResolvedTool, project_root: Path) -> S3Files | None:
        """The S3 objects of a resolved tool, or None when its source is something else."""
        spec = tool.config.bucket
        if spec is None:
            return None
        return cls(spec, tool.name, project_root / SOURCES_DIR / tool.name / "files")

    def state(self) -> dict[str, Any]:
        """``objects`` (per file, below the prefix: its ETag) and ``listed_at``."""
        try:
            data = json.loads(self.state_file.read_text(encoding="utf-8"))
            return data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            return {}

    def describe(self) -> dict[str, Any]:
        """The bucket, prefix, objects fetched and when the prefix was last listed (None
        before the first listing): for ``store info`` and ``config show``."""
        state = self.state()
        when = state.get("listed_at")
        return {
            "bucket": self.bucket,
            "prefix": self.prefix,
            "objects": len(state.get("objects", {})),
            "fetched_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(when)) if when else None,
        }

    def url_of(self, doc_id: str) -> str:
        """The ``s3://`` URL of a stored document."""
        return f"s3://{self.bucket}/{self.prefix}{doc_id}"

    def sync(self) -> dict[str, int]:
        """Download every object whose ETag changed; counts of ``fetched``, ``not_modified``
        and ``removed``."""
        require("s3", "boto3", feature=f"tool {self.tool}: an s3:// source")
        import boto3
        from botocore.exceptions import BotoCoreError, ClientError

        self.folder.mkdir(parents=True, exist_ok=True)
        old = self.state()
        stored: dict[str, str] = old.get("objects", {})
        counts = {"fetched": 0, "not_modified": 0, "removed": 0}
        try:
            client = boto3.client("s3")
            listed: dict[str, str] = {}
            pages = client.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=self.prefix
            )
            for page in pages:
                for obj in page.get("Contents", []):
                    rel = obj["Key"][len(self.prefix) :]
                    if rel and not rel.endswith("/") and ".." not in PurePosixPath(rel).parts:
                        listed[rel] = obj["ETag"]
            for rel, etag in listed.items():
                target = self.folder / rel
                if stored.get(rel) == etag and target.is_file():
                    counts["not_modified"] += 1
                    continue
                body = client.get_object(Bucket=self.bucket, Key=self.prefix + rel)["Body"].read()
                target.parent.mkdir(parents=True, exist_ok=True)
                part = target.with_name(f".{target.name}.part")  # hidden: never discovered
                part.write_bytes(body)
                os.replace(part, target)
                counts["fetched"] += 1
        except (BotoCoreError, ClientError) as exc:
            if not any(self.folder.rglob("*")) or "listed_at" not in old:
                raise ConfigError(
                    f"tool {self.tool}: cannot read {self.spec.s3}: {redact(str(exc))}; check "
                    "the bucket, the network and the AWS credentials (AWS_PROFILE, "
                    "AWS_ACCESS_KEY_ID, ~/.aws)"
                ) from None
            when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(old["listed_at"]))
            log.warning(
                "%s: cannot read %s (%s); using what was fetched %s",
                self.tool,
                self.spec.s3,
                redact(str(exc)),
                when,
            )
            return counts
        for rel in set(stored) - set(listed):
            gone = self.folder / rel
            if gone.is_file():
                gone.unlink()
                counts["removed"] += 1
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps({"objects": listed, "listed_at": time.time()}), "utf-8")
        os.replace(tmp, self.state_file)
        return counts
