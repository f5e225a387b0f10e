"""The life of the RediSearch index: its keys, its schema, its creation, its check against what
the server says it is, its upgrade (FT.ALTER) and its rebuild.

One index (HNSW or FLAT; COSINE, L2 or IP) over HASH keys serves every tenant and library.
Key layout, for index ``<name>``:

- ``<name>:chunk:<chunk_id>``  one HASH per chunk (the indexed documents; its ``section``,
  the heading path, is stored, not indexed: a chunk of an older release has none);
- ``<name>:meta``              HASH: embedding model, dimensions, algorithm, metric;
- ``<name>:docs:<scope>``      HASH per tenant+library: doc_id -> DocState as JSON;
- ``<name>:owner:<scope>``     HASH per tenant+library: who fills it (project id, source...);
- ``<name>:lock:<scope>``      redis-py Lock: one ingest per library at a time (``lock``);
- ``<name>:lock:create``       redis-py Lock: one creation or rebuild of the index at a time;

where ``<scope>`` is ``["tenant", "library"]`` in JSON (unambiguous whatever the ids hold).
The meta key is written last when the index is created, so it marks the index complete.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Literal, cast

import redis
from redis.lock import Lock
from redisvl.index import SearchIndex

from holodeck.errors import ConfigError, IngestError
from holodeck.vectorstore.errors import MODEL_MISMATCH, StoreError
from holodeck.vectorstore.records import IndexInfo, indexed_text
from holodeck.vectorstore.redis.errors import RedisErrors
from holodeck.vectorstore.redis.fields import TAG_FIELDS, TAG_SEPARATOR, keyword_fields, text_of
from holodeck.vectorstore.redis.lock import create_lock
from holodeck.vectorstore.redis.queries import info_pairs, info_value

logger = logging.getLogger(__name__)

Algorithm = Literal["HNSW", "FLAT"]
Metric = Literal["COSINE", "L2", "IP"]

#: Records per pipelined write.
WRITE_BATCH = 500
#: Keys per DEL when a rebuild removes the document states.
DELETE_BATCH = 1000
#: How long a new index may take to finish the scan of the keyspace FT.CREATE starts.
SCAN_TIMEOUT_S = 300.0
#: Every field of holodeck's index and its type, as FT.INFO reports them.
_SCHEMA_TYPES = {
    **dict.fromkeys(TAG_FIELDS, "TAG"), "chunk_index": "NUMERIC", "vector": "VECTOR",
}  # fmt: skip
_ISOLATION_FIELDS = ("tenant_id", "library_id", "doc_id", "vector")


class RedisIndex:
    """One named index on one server: its meta (read once, then answered from memory), the
    redisvl handle with the settings the index really has, and the keys around it."""

    def __init__(
        self,
        client: redis.Redis,
        errors: RedisErrors,
        url: str,
        name: str,
        algorithm: Algorithm,
        metric: Metric,
    ) -> None:
        self._client = client
        self._errors = errors
        self._url = url
        self.name = name
        self._new_algorithm = algorithm  # what a new index is created with
        self._new_metric = metric
        self.prefix = name
        self.meta_key = f"{name}:meta"
        #: An empty index of holodeck's shape without meta found on connecting: what it was.
        self._leftover: str | None = None
        self._info: IndexInfo | None = None
        self._handle: SearchIndex | None = None
        self.algorithm: Algorithm = algorithm  # what the index really uses
        self.metric: Metric = metric

    def key(self, kind: str, tenant_id: str, library_id: str) -> str:
        """The ``<name>:<kind>:<scope>`` key of one tenant's library (``docs``, ``owner``,
        ``lock``)."""
        return f"{self.prefix}:{kind}:" + json.dumps([tenant_id, library_id], ensure_ascii=False)

    def forget(self) -> None:
        """Read the meta again next time (the server may have lost the index)."""
        self._info = None

    def describe(self) -> IndexInfo | None:
        """Model and dimensions from ``<name>:meta``; read once, then answered from memory."""
        if self._info is not None:
            return self._info
        with self._errors.guard():
            meta = self._read_meta()
            if meta is None:
                return None
            info, algorithm, metric = meta
            if (algorithm, metric) != (self._new_algorithm, self._new_metric):
                logger.warning(
                    "Redis index %s was created with %s/%s, not the configured %s/%s; "
                    "keeping the index's settings (rebuild with --force-ingest to change them)",
                    self.name, algorithm, metric, self._new_algorithm, self._new_metric,
                )  # fmt: skip
            index = self._open(info, algorithm, metric)
            if not index.exists():
                logger.warning(
                    "Redis index %s was missing beside its meta key; created it again", self.name
                )
                index.create()
            else:
                self._add_keyword_fields()
            self._info = info
            return info

    def create(self, info: IndexInfo) -> None:
        """Create the index and its meta key; a no-op when it exists for the same ``info``."""
        with self._errors.guard(), self._create_lock():
            meta = self._read_meta()
            if meta is not None:
                if meta[0] != info:
                    raise StoreError(
                        MODEL_MISMATCH,
                        f"Redis index {self.name} holds {meta[0].embedding_model} "
                        f"({meta[0].dimensions} dims), not {info.embedding_model} "
                        f"({info.dimensions} dims)",
                    )
                self._info = None
                self.describe()
                return
            self._create(info)

    def recreate(self, info: IndexInfo) -> None:
        """Drop the index with every chunk, document state and meta; create it anew.

        Document states go first, so a crash half-way leaves documents to re-ingest, never
        states that claim chunks which are gone.
        """
        with self._errors.guard(), self._create_lock():
            states = list(self._client.scan_iter(match=f"{self.prefix}:docs:*", count=1000))
            for start in range(0, len(states), DELETE_BATCH):
                self._client.delete(*states[start : start + DELETE_BATCH])
            index = self._open(info, self._new_algorithm, self._new_metric)
            if index.exists():
                index.delete(drop=True)
            self._client.delete(self.meta_key)
            self._info = None
            self._create(info)

    def existing(self) -> SearchIndex | None:
        """The index handle, or None while no index was created (reads then find nothing)."""
        if self.describe() is None:
            return None
        return self._handle

    def require(self) -> SearchIndex:
        index = self.existing()
        if index is None:
            raise RuntimeError(f"Redis index {self.name} does not exist: create() it first")
        return index

    def refuse_foreign(self) -> None:
        """Refuse, before any key is written, an existing index holodeck cannot safely use.

        Holodeck's index stores HASH keys under ``<name>:chunk`` with its tag fields and a
        ``vector`` field whose length its meta key records. Another application's index of
        the same name would be written into (and miss every chunk); one with another vector
        length indexes nothing. An empty index of holodeck's shape without the meta key is
        what an interrupted first ingest leaves: it is kept, and rebuilt by ``create``.
        """
        try:
            info = self._client.ft(self.name).info()
        except redis.exceptions.ResponseError:
            return  # dropped since it was listed
        definition = info.get("index_definition") or {}
        if not isinstance(definition, dict):
            definition = info_pairs(definition)
        fields = {text_of(info_value(a, "identifier")): a for a in info.get("attributes", [])}
        prefixes = [text_of(p).rstrip(":") for p in definition.get("prefixes", [])]
        wanted_prefix = f"{self.prefix}:chunk"
        field_types = {name: text_of(info_value(a, "type")).upper() for name, a in fields.items()}
        meta = self._read_meta()
        # With its meta key the index is holodeck's own (perhaps from a release with fewer
        # fields): only what isolation and search need must be there.
        needed = _SCHEMA_TYPES if meta is None else _ISOLATION_FIELDS
        missing = [name for name in needed if field_types.get(name) != _SCHEMA_TYPES[name]]
        why = None
        if text_of(definition.get("key_type", "")).upper() != "HASH":
            why = f"it indexes {text_of(definition.get('key_type', '?'))} keys, not HASH"
        elif prefixes != [wanted_prefix]:
            shown = ", ".join(repr(p) for p in prefixes) or "none"
            why = f"it indexes keys under {shown}, not {wanted_prefix!r}"
        elif missing:
            why = f"it lacks holodeck's fields ({', '.join(missing)})"
        if why is None and meta is not None:
            dims = int(info_value(fields["vector"], "dim") or 0)
            if dims != meta[0].dimensions:
                why = (
                    f"its vectors have {dims} dims but its meta key {self.meta_key} says "
                    f"{meta[0].dimensions}"
                )
        if why is None and meta is None and int(info.get("num_docs", 0) or 0) > 0:
            why = f"it holds {info['num_docs']} documents but no holodeck meta key"
        if why is None and meta is None:  # kept, and replaced by ``create``: say what it was
            length = text_of(info_value(fields["vector"], "dim") or "?")
            self._leftover = f"{length} dims, no documents, no holodeck meta key {self.meta_key}"
        if why is not None:
            raise ConfigError(
                f"Redis index {self.name} at {self._url} is not holodeck's ({why}); "
                f"set another database index_name for this tool, or drop that index "
                f"(FT.DROPINDEX {self.name}) if nothing uses it"
            )

    # -- internals ---------------------------------------------------------------------
    def _create_lock(self) -> Lock:
        return create_lock(self._client, f"{self.prefix}:lock:create")

    def _read_meta(self) -> tuple[IndexInfo, Algorithm, Metric] | None:
        raw = self._client.hgetall(self.meta_key)
        if not raw:
            return None
        meta = {text_of(k): text_of(v) for k, v in raw.items()}
        info = IndexInfo(meta["embedding_model"], int(meta["dimensions"]))
        return info, cast(Algorithm, meta["algorithm"]), cast(Metric, meta["metric"])

    def _create(self, info: IndexInfo) -> None:
        """Create the RediSearch index, then the meta key (which marks it complete)."""
        index = self._open(info, self._new_algorithm, self._new_metric)
        # Replaces an index without meta: one an interrupted first create left, found empty
        # and of holodeck's shape when this adapter connected (anything else was refused).
        if self._leftover is not None and index.exists():
            logger.warning(
                "Redis index %s at %s was dropped and is created again for %s (%d dims): it "
                "had holodeck's fields but %s (a first ingest cut short, or made by hand)",
                self.name, self._url, info.embedding_model, info.dimensions, self._leftover,
            )  # fmt: skip
        self._leftover = None
        index.create(overwrite=True)
        self._await_scan()
        self._client.hset(
            self.meta_key,
            mapping={
                "embedding_model": info.embedding_model,
                "dimensions": info.dimensions,
                "algorithm": self._new_algorithm,
                "metric": self._new_metric,
            },
        )
        self._info = info
        logger.info(
            "created Redis index %s (%s, %s, %d dims, %s) at %s",
            self.name, self._new_algorithm, self._new_metric, info.dimensions,
            info.embedding_model, self._url,
        )  # fmt: skip

    def _await_scan(self) -> None:
        """Return once the keyspace scan FT.CREATE (or FT.ALTER) starts has finished. A chunk
        written while it runs is indexed twice (by the write and again by the scan), and the
        first copy's words stay in the index's statistics (average length, term counts) until
        its garbage collection: every BM25 score shifts, by how busy the machine was or how
        many other keys the server holds, and with them the hybrid ranking."""
        deadline = time.monotonic() + SCAN_TIMEOUT_S
        pause = 0.005
        with self._errors.guard():
            while True:
                info = {text_of(k): v for k, v in self._client.ft(self.name).info().items()}
                if int(text_of(info.get("indexing", 0))) == 0:
                    return
                if time.monotonic() > deadline:
                    raise IngestError(
                        f"Redis at {self._url} did not finish scanning its keys for index "
                        f"{self.name} in {SCAN_TIMEOUT_S:g} s; no chunk was written: run "
                        f"the command again when the server is less busy"
                    )
                time.sleep(pause)
                pause = min(pause * 2, 0.1)

    def _open(self, info: IndexInfo, algorithm: str, metric: str) -> SearchIndex:
        """The redisvl handle for the index, with the schema it was (or will be) created with."""
        tag = {"separator": TAG_SEPARATOR, "case_sensitive": True}
        schema = {
            "index": {
                "name": self.name,
                "prefix": f"{self.prefix}:chunk",
                "key_separator": ":",
                "storage_type": "hash",
            },
            "fields": [
                *({"name": name, "type": "tag", "attrs": tag} for name in TAG_FIELDS),
                # BM25 keyword search over Porter stems made here (as FTS5 does locally): the
                # Query Engine's own stemming scores a word and its stem twice
                {"name": "stems", "type": "text", "attrs": {"no_stem": True}},
                {"name": "idents", "type": "tag", "attrs": {"separator": TAG_SEPARATOR}},
                {"name": "chunk_index", "type": "numeric", "attrs": {"sortable": True}},
                {
                    "name": "vector",
                    "type": "vector",
                    "attrs": {
                        "dims": info.dimensions,
                        "algorithm": algorithm.lower(),
                        "distance_metric": metric.lower(),
                        "datatype": "float32",
                    },
                },
            ],
        }
        self._handle = SearchIndex.from_dict(schema, redis_client=self._client)
        self.algorithm = cast(Algorithm, algorithm.upper())
        self.metric = cast(Metric, metric.upper())
        return self._handle

    def _add_keyword_fields(self) -> None:
        """An index made before keyword search gains its ``stems`` TEXT and ``idents`` TAG
        fields (FT.ALTER) and its chunks their values, made from their stored text; the Query
        Engine then indexes them in the background."""
        info = self._client.ft(self.name).info()
        names = {
            text_of(value)
            for attr in info["attributes"]
            for key, value in zip(attr[::2], attr[1::2], strict=False)
            if text_of(key) == "attribute"
        }
        wanted = {
            "stems": ["TEXT", "NOSTEM"],
            "idents": ["TAG", "SEPARATOR", TAG_SEPARATOR],
        }
        missing = [name for name in wanted if name not in names]
        if not missing:
            return
        for name in missing:
            self._client.execute_command(
                "FT.ALTER", self.name, "SCHEMA", "ADD", name, *wanted[name]
            )
        self._await_scan()  # FT.ALTER scans the keyspace again, as FT.CREATE does
        keys = list(self._client.scan_iter(match=f"{self.prefix}:chunk:*", count=1000))
        for start in range(0, len(keys), WRITE_BATCH):
            part = keys[start : start + WRITE_BATCH]
            with self._client.pipeline(transaction=False) as pipe:
                for key in part:
                    pipe.hmget(key, ["content", "section"])
                contents = pipe.execute()
            with self._client.pipeline(transaction=False) as pipe:
                for key, (content, section) in zip(part, contents, strict=True):
                    if content is not None:
                        keywords = keyword_fields(
                            indexed_text(text_of(content), text_of(section or ""))
                        )
                        pipe.hset(
                            key,
                            mapping={"stems": keywords["stems"], "idents": keywords["idents"]},
                        )
                pipe.execute()
        logger.info(
            "Redis index %s gained the fields of keyword search; its %d chunks are indexed "
            "for it in the background",
            self.name,
            len(keys),
        )
