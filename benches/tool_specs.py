"""``Hide.tool_specs``: recall, tool-spec tokens, billed input and ranking time on a seeded MCP-like catalog.

The catalog: 150 tools of seven servers shaped like real MCP servers (file system, git, GitHub,
cloud, a database, a browser, web search), built from a seed: snake-case names of a verb and an
object, a description of two to four sentences, three to six parameters with descriptions. The
queries: 300, made by a seeded process that knows nothing of the ranker: each picks a tool, then
either says what it wants with words of the tool's name and description ("lexical"), or, for half
of them, only with words of its parameters that its name and description do not hold ("non-lexical":
no term, after the ranker's own folding and stemming, in common with the name or description).

Figures:
- recall with ``keep=10``: a query's tool among the specs its request showed (a real Agent with
  ``Hide.tool_specs(config={"keep": 10})``, one invocation per query), overall and per half, the
  non-lexical half beside a seeded random choice of 10;
- tool-spec tokens per request (the model's count of each spec), with and without the strategy;
- billed input of a 40-turn session whose topic drifts from server to server, through strands'
  BedrockModel on the simulated prompt cache of ``strands_offload.bench.prompt_cache``, with and
  without caching configured, with and without the strategy (``Offload`` defaults in both);
- time: building the native index of 150 specs, one decision's ranking (the content-hash check
  included), the same for 10,000 specs, and a whole decision of the strategy (the SDK's
  ``get_all_tool_specs``, the spec texts, the ranking).

Run: ``python benches/tool_specs.py [--json OUT]`` (about half a minute). Recall and token figures
are deterministic; times depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import statistics
import time
from collections.abc import Sequence
from typing import Any

from strands import Agent
from strands.models.model import CacheConfig
from strands.tools.tools import PythonAgentTool
from strands_offload._native import Bm25Ranker, rank_terms
from strands_offload.bench import prompt_cache
from strands_offload.bench.prompt_cache import PromptCache, SimClock
from strands_offload.bench.stub_clients import Reply, bedrock_model
from strands_offload.context_manager import ContextManager, Hide
from strands_offload.context_manager.strategies.hide.tool_specs import _spec_text
from strands_offload.demo.scripted_model import Reply as ScriptReply
from strands_offload.demo.scripted_model import ScriptedModel

SEED = 41
KEEP = 10

# server -> (verbs, objects, domain words for descriptions, parameter pool: name -> words of its description)
SERVERS: dict[str, tuple[list[str], list[str], list[str], dict[str, list[str]]]] = {
    "filesystem": (
        ["read", "write", "list", "move", "copy", "delete", "search", "stat", "watch", "tail"],
        ["file", "directory", "symlink", "archive", "permissions", "tree"],
        "disk local path contents bytes folder mounted volume workspace sandbox".split(),
        {
            "path": "absolute location inside allowed roots".split(),
            "encoding": "charset utf8 latin1 decoding".split(),
            "recursive": "descend nested subfolders depth".split(),
            "pattern": "glob wildcard matching names".split(),
            "max_bytes": "limit size truncated cap".split(),
            "follow_links": "dereference targets aliases".split(),
            "mode": "octal chmod owner group".split(),
            "destination": "target relocation new location".split(),
        },
    ),
    "git": (
        ["commit", "diff", "log", "branch", "checkout", "stash", "rebase", "blame", "tag", "reset"],
        ["changes", "history", "branch", "worktree", "refs"],
        "repository revision staged working tree version control local clone".split(),
        {
            "repo_path": "checkout root clone folder".split(),
            "message": "summary line describing why".split(),
            "ref": "sha hash revision pointer".split(),
            "author": "name email signature identity".split(),
            "max_count": "entries limit newest".split(),
            "paths": "restrict pathspec subset".split(),
            "hard": "discard uncommitted destructive".split(),
            "onto": "upstream base replay".split(),
        },
    ),
    "github": (
        ["create", "get", "list", "update", "merge", "close", "comment", "review", "label", "assign"],
        ["issue", "pull_request", "release", "workflow_run", "gist", "discussion"],
        "github hosted project remote collaborators maintainers organization platform".split(),
        {
            "owner": "account organization handle".split(),
            "repo": "project slug name".split(),
            "title": "headline short heading".split(),
            "body": "markdown text details".split(),
            "labels": "tags triage categories".split(),
            "assignees": "people responsible usernames".split(),
            "state": "open closed draft merged".split(),
            "number": "numeric identifier ticket".split(),
        },
    ),
    "cloud": (
        ["list", "describe", "start", "stop", "create", "delete", "scale", "tag", "invoke", "rotate"],
        ["buckets", "instances", "functions", "secrets", "queues", "clusters"],
        "cloud account region provider infrastructure managed service resources".split(),
        {
            "region": "datacenter zone geography".split(),
            "instance_type": "cpu memory size flavor".split(),
            "bucket_name": "object storage container".split(),
            "function_name": "serverless lambda handler".split(),
            "secret_id": "credential vault key".split(),
            "desired_count": "replicas capacity nodes".split(),
            "tags": "metadata cost allocation".split(),
            "payload": "event json input".split(),
        },
    ),
    "database": (
        ["run", "explain", "list", "describe", "create", "drop", "export", "import", "vacuum", "index"],
        ["query", "tables", "schema", "rows", "migration", "snapshot"],
        "sql database postgres relational records transaction engine".split(),
        {
            "sql": "statement select join where".split(),
            "table": "relation entity columns".split(),
            "params": "bind placeholders values".split(),
            "limit": "rows maximum returned".split(),
            "timeout_ms": "milliseconds abort slow".split(),
            "format": "csv parquet output".split(),
            "schema_name": "namespace catalog public".split(),
            "analyze": "statistics planner costs".split(),
        },
    ),
    "browser": (
        ["navigate", "click", "type", "screenshot", "scroll", "hover", "evaluate", "wait", "select", "close"],
        ["page", "element", "tab", "form", "frame", "console"],
        "browser web page headless chromium dom rendering".split(),
        {
            "url": "address https link".split(),
            "selector": "css xpath locator".split(),
            "text": "characters keystrokes typed".split(),
            "full_page": "entire viewport capture".split(),
            "timeout": "seconds waiting patience".split(),
            "script": "javascript snippet executed".split(),
            "button": "left right middle mouse".split(),
            "option": "dropdown choice value".split(),
        },
    ),
    "search": (
        ["search", "fetch", "summarize", "find", "lookup", "crawl", "rank", "extract", "news", "define"],
        ["web", "news", "images", "papers", "definitions", "sites"],
        "search engine internet results online sources ranking".split(),
        {
            "query": "keywords terms phrase".split(),
            "count": "number hits wanted".split(),
            "freshness": "recent day week month".split(),
            "safe_search": "filter adult explicit".split(),
            "country": "locale market language".split(),
            "site": "domain restrict host".split(),
            "offset": "pagination skip next".split(),
            "include_snippets": "excerpts previews highlights".split(),
        },
    ),
}
# What a verb or an object of each server asks for in its own parameter: name, words of its description.
VERB_PARAMS: dict[str, dict[str, tuple[str, str]]] = {
    "filesystem": {
        "read": ("offset_line", "start reading partway lines"),
        "write": ("content", "text replacing overwriting"),
        "list": ("show_hidden", "dotfiles invisible entries"),
        "move": ("overwrite", "clobber existing collision"),
        "copy": ("preserve_times", "timestamps modification keep"),
        "delete": ("trash", "recycle bin recoverable"),
        "search": ("needle", "substring occurrences grep"),
        "stat": ("fields", "inode owner mtime"),
        "watch": ("events", "notify modified created"),
        "tail": ("lines_from_end", "last newest appended"),
    },
    "git": {
        "commit": ("amend", "previous redo fixup"),
        "diff": ("context_lines", "hunks surrounding unified"),
        "log": ("since", "date after period"),
        "branch": ("new_name", "fork line development"),
        "checkout": ("create", "switch fresh start"),
        "stash": ("include_untracked", "shelve temporarily aside"),
        "rebase": ("interactive", "squash reorder rewrite"),
        "blame": ("line_range", "annotate who wrote"),
        "tag": ("annotation", "milestone marker signed"),
        "reset": ("soft", "unstage move pointer"),
    },
    "github": {
        "create": ("template", "boilerplate starter form"),
        "get": ("include_reactions", "emoji thumbs counts"),
        "list": ("sort", "ordering newest oldest"),
        "update": ("fields_to_change", "edit modify patch"),
        "merge": ("merge_method", "squash fast-forward strategy"),
        "close": ("reason", "duplicate wontfix resolved"),
        "comment": ("reply_to", "thread answer conversation"),
        "review": ("verdict", "approve request changes"),
        "label": ("color", "hex badge colour"),
        "assign": ("reviewers", "teammates ownership responsibility"),
    },
    "cloud": {
        "list": ("page_token", "continuation paging marker"),
        "describe": ("verbose", "detailed attributes full"),
        "start": ("wait_until_running", "boot ready healthy"),
        "stop": ("force", "immediate shutdown halt"),
        "create": ("template_id", "blueprint image provisioning"),
        "delete": ("retain_data", "backup before teardown"),
        "scale": ("target_capacity", "autoscale grow shrink"),
        "tag": ("key_value_pairs", "labels billing ownership"),
        "invoke": ("async_mode", "fire forget background"),
        "rotate": ("rotation_days", "expire renew credentials"),
    },
    "database": {
        "run": ("read_only", "safe mutations forbidden"),
        "explain": ("buffers", "io plan timing"),
        "list": ("pattern_like", "filter names matching"),
        "describe": ("include_constraints", "foreign keys primary"),
        "create": ("if_not_exists", "idempotent skip present"),
        "drop": ("cascade", "dependent objects remove"),
        "export": ("compression", "gzip zstd smaller"),
        "import": ("on_conflict", "upsert duplicates skip"),
        "vacuum": ("full", "reclaim space bloat"),
        "index": ("method", "btree gin hash"),
    },
    "browser": {
        "navigate": ("wait_until", "load networkidle domcontentloaded"),
        "click": ("double", "twice rapid dblclick"),
        "type": ("delay_ms", "keystroke pacing slowly"),
        "screenshot": ("image_format", "png jpeg quality"),
        "scroll": ("pixels", "distance downward offset"),
        "hover": ("duration", "linger pointer tooltip"),
        "evaluate": ("return_by_value", "serialize result object"),
        "wait": ("condition", "appear visible disappear"),
        "select": ("multiple", "several choices listbox"),
        "close": ("run_unload", "beforeunload handlers prompt"),
    },
    "search": {
        "search": ("operators", "boolean quotes exclude"),
        "fetch": ("render_js", "dynamic scripts executed"),
        "summarize": ("length", "brief paragraph bullets"),
        "find": ("exact_match", "verbatim precise literal"),
        "lookup": ("entity_type", "person place organization"),
        "crawl": ("max_depth", "follow links levels"),
        "rank": ("criteria", "relevance authority recency"),
        "extract": ("schema_hint", "fields structured tables"),
        "news": ("publisher", "outlet press agency"),
        "define": ("dictionary", "lexicon etymology usage"),
    },
}
OBJECT_PARAMS: dict[str, dict[str, tuple[str, str]]] = {
    "filesystem": {
        "file": ("file_path", "document text binary"),
        "directory": ("dir_path", "container entries listing"),
        "symlink": ("link_target", "pointing shortcut alias"),
        "archive": ("archive_format", "zip tar compressed"),
        "permissions": ("acl", "access rights users"),
        "tree": ("max_depth", "hierarchy levels nested"),
    },
    "git": {
        "changes": ("staged_only", "index prepared additions"),
        "history": ("oneline", "compact condensed summary"),
        "branch": ("branch_name", "feature line topic"),
        "worktree": ("worktree_path", "parallel second checkout"),
        "refs": ("ref_kind", "heads remotes tags"),
    },
    "github": {
        "issue": ("issue_number", "bug ticket report"),
        "pull_request": ("pull_number", "proposed patch contribution"),
        "release": ("tag_name", "version shipped notes"),
        "workflow_run": ("run_id", "ci pipeline job"),
        "gist": ("gist_id", "snippet paste shared"),
        "discussion": ("category", "forum question announcement"),
    },
    "cloud": {
        "buckets": ("bucket", "object store blobs"),
        "instances": ("instance_id", "virtual machine server"),
        "functions": ("function_arn", "lambda code handler"),
        "secrets": ("secret_name", "password token vault"),
        "queues": ("queue_url", "messages backlog consumers"),
        "clusters": ("cluster_name", "kubernetes nodes pods"),
    },
    "database": {
        "query": ("statement", "select sql clause"),
        "tables": ("table_name", "relation columns rows"),
        "schema": ("schema", "namespace layout design"),
        "rows": ("where", "predicate records matching"),
        "migration": ("version", "upgrade step evolve"),
        "snapshot": ("snapshot_id", "backup point restore"),
    },
    "browser": {
        "page": ("page_id", "document loaded site"),
        "element": ("selector", "css node locator"),
        "tab": ("tab_index", "window opened switch"),
        "form": ("form_selector", "inputs submit fields"),
        "frame": ("frame_name", "iframe embedded nested"),
        "console": ("level", "log warnings errors"),
    },
    "search": {
        "web": ("query", "keywords phrase terms"),
        "news": ("topic", "headlines current events"),
        "images": ("image_size", "pictures photos resolution"),
        "papers": ("venue", "academic journal arxiv"),
        "definitions": ("word", "meaning term vocabulary"),
        "sites": ("domain", "website host pages"),
    },
}


# How users talk about each server's work in words no spec of the catalog holds (checked when the queries are made).
USER_WORDS: dict[str, list[str]] = {
    "filesystem": "doc notes somewhere drive saved txt laptop stuff".split(),
    "git": "checkin codebase lately teammate undo yesterday".split(),
    "github": "bugfix contributor upstream heads ping kanban".split(),
    "cloud": "aws gcp azure spend infra outage".split(),
    "database": "customers orders revenue dashboard slowness".split(),
    "browser": "website login signup checkout cart".split(),
    "search": "google lookup research wikipedia trending".split(),
}
FILLER = "please could you i need want help me quickly now today for with the a this".split()
FILLER_SENTENCES = [
    "Returns a structured result the model can read.",
    "Fails with a clear error when the input is invalid.",
    "Respects the configured permissions and limits.",
    "Large outputs are paginated; ask for the next page when needed.",
    "Use it when the user asks for this explicitly or the task requires it.",
    "Results are returned in a stable order so repeated calls can be compared.",
]


def catalog(seed: int = SEED) -> list[dict[str, Any]]:
    """150 tool specs (21 or 22 per server), seeded."""
    rng = random.Random(seed)
    specs: list[dict[str, Any]] = []
    per_server = [22, 22, 21, 21, 21, 22, 21]
    for (server, (verbs, objects, domain, pool)), count in zip(SERVERS.items(), per_server, strict=True):
        pairs = [(v, o) for v in verbs for o in objects]
        rng.shuffle(pairs)
        for verb, obj in pairs[:count]:
            name = f"{server[:3]}_{verb}_{obj}" if rng.random() < 0.3 else f"{verb}_{obj}"
            words = rng.sample(domain, 4)
            description = (
                f"{verb.capitalize()} {obj.replace('_', ' ')} on the {server} server: "
                f"{words[0]} {words[1]} and {words[2]} {words[3]}. "
                + " ".join(rng.sample(FILLER_SENTENCES, rng.randint(1, 2)))
            )
            properties: dict[str, Any] = {}
            own = [VERB_PARAMS[server][verb], OBJECT_PARAMS[server][obj]]
            shared = [(param, " ".join(pool[param])) for param in rng.sample(sorted(pool), rng.randint(1, 4))]
            for param, cue in [*own, *shared]:
                tail = " " + rng.choice(FILLER_SENTENCES) if rng.random() < 0.3 else ""
                properties[param] = {"type": "string", "description": f"The {param.replace('_', ' ')}: {cue}.{tail}"}
            specs.append(
                {
                    "name": name,
                    "description": description,
                    "inputSchema": {
                        "json": {"type": "object", "properties": properties, "required": sorted(properties)[:1]}
                    },
                }
            )
    names = [spec["name"] for spec in specs]
    assert len(set(names)) == len(names) == 150
    return specs


def _terms(text: str) -> set[str]:
    return set(rank_terms(text))


def queries(specs: Sequence[dict[str, Any]], seed: int = SEED * 100, n: int = 300) -> list[tuple[str, str, bool]]:
    """``(query, right tool, lexical)``: half lexical, half sharing no term with the tool's name or description."""
    rng = random.Random(seed)
    servers = list(SERVERS)
    everything = set().union(*(_terms(_spec_text(spec)) for spec in specs))
    out: list[tuple[str, str, bool]] = []
    while len(out) < n:
        spec = rng.choice(specs)
        lexical = len(out) % 2 == 0
        surface = _terms(f"{spec['name']} {spec['description']}")
        if lexical:
            words = spec["name"].split("_")[-2:] + rng.sample(spec["description"].split(":")[1].split()[:4], 2)
        else:
            # Words of its parameters, as a user describes what they have in mind.
            properties = list(spec["inputSchema"]["json"]["properties"].values())
            own = [w for p in properties[:2] for w in p["description"].split(":")[1].split(".")[0].split()]
            own = [w for w in own if not (_terms(w) & surface)]
            server = servers[min(specs.index(spec) * 7 // len(specs), 6)]
            spoken = [w for w in USER_WORDS[server] if not (_terms(w) & everything)]
            k = rng.choice((1, 2, 3))  # words of the spec's parameters; the rest the user's own
            if len(own) < k:
                continue
            words = rng.sample(own, k) + rng.sample(spoken, 3 - k)
        text = " ".join([*rng.sample(FILLER, 3), *words]).strip()
        if not lexical and _terms(text) & surface:
            continue
        out.append((text, spec["name"], lexical))
    return out


def tools(specs: Sequence[dict[str, Any]]) -> list[PythonAgentTool]:
    def run(tool_use: Any, **_: Any) -> dict[str, Any]:
        return {"toolUseId": tool_use["toolUseId"], "status": "success", "content": [{"text": "ok"}]}

    return [PythonAgentTool(spec["name"], spec, run) for spec in specs]  # type: ignore[arg-type]


class Recording(ScriptedModel):
    def __init__(self) -> None:
        super().__init__(lambda messages: ScriptReply(text="done"))
        self.shown: list[list[str]] = []

    def stream(self, messages: Any, tool_specs: Any = None, *args: Any, **kwargs: Any) -> Any:
        self.shown.append([spec["name"] for spec in tool_specs or ()])
        return super().stream(messages, tool_specs, *args, **kwargs)


def recall(specs: list[dict[str, Any]], asked: list[tuple[str, str, bool]]) -> dict[str, Any]:
    model = Recording()
    manager = ContextManager(strategies=[Hide.tool_specs(config={"keep": KEEP})], stash=False)
    agent = Agent(model=model, tools=tools(specs), context_manager=manager, callback_handler=None)
    hits = {True: 0, False: 0}
    counts = {True: 0, False: 0}
    for text, right, lexical in asked:
        agent.messages.clear()  # one invocation per query, no carried-over history
        agent(text)
        counts[lexical] += 1
        hits[lexical] += right in model.shown[-1]
    rng = random.Random(SEED + 1)
    names = [spec["name"] for spec in specs]
    random_hits = sum(right in rng.sample(names, KEEP) for _, right, lexical in asked if not lexical)
    full = asyncio.run(model.count_tokens([], tool_specs=specs))
    by_name = {spec["name"]: asyncio.run(model.count_tokens([], tool_specs=[spec])) for spec in specs}
    shown = [sum(by_name[n] for n in names_ if n in by_name) for names_ in model.shown]
    fallbacks = sum(len(names_) == len(specs) for names_ in model.shown)
    return {
        "queries": len(asked),
        "recall": (hits[True] + hits[False]) / len(asked),
        "recall_lexical": hits[True] / counts[True],
        "recall_non_lexical": hits[False] / counts[False],
        "random_recall_non_lexical": random_hits / counts[False],
        "no_match_all_shown": fallbacks,
        "spec_tokens_all": full,
        "spec_tokens_per_request": statistics.mean(shown),
        "spec_tokens_lower": 1 - statistics.mean(shown) / full,
        "savings": str(manager.savings()),
    }


def timing(specs: list[dict[str, Any]]) -> dict[str, float]:
    texts = [_spec_text(spec) for spec in specs]
    query = "list the open pull requests of the project and label them"

    def per_call(ranker: Bm25Ranker, docs: list[str], rounds: int) -> float:
        ranker.score(query, docs)
        start = time.perf_counter()
        for _ in range(rounds):
            ranker.score(query, docs)
        return (time.perf_counter() - start) / rounds

    builds = []
    for _ in range(20):
        fresh = Bm25Ranker()
        start = time.perf_counter()
        fresh.score(query, texts)
        builds.append(time.perf_counter() - start)
    big = [f"{text}\nvariant {i}" for i in range(67) for text in texts][:10_000]
    fresh = Bm25Ranker()
    start = time.perf_counter()
    fresh.score(query, big)
    build_big = time.perf_counter() - start

    # A whole decision of the strategy (a new invocation each time, the index already built).
    manager = ContextManager(strategies=[Hide.tool_specs(config={"keep": KEEP})], stash=False)
    agent = Agent(model=Recording(), tools=tools(specs), context_manager=manager, callback_handler=None)
    agent.messages.append({"role": "user", "content": [{"text": query}]})
    strategy = manager.strategies[0]
    state = strategy._state(agent)

    async def decisions(rounds: int) -> float:
        await strategy._decide(agent, state, {})
        start = time.perf_counter()
        for _ in range(rounds):
            await strategy._decide(agent, state, {})
        return (time.perf_counter() - start) / rounds

    return {
        "build_150_ms": statistics.median(builds) * 1e3,
        "rank_150_ms": per_call(Bm25Ranker(), texts, 2000) * 1e3,
        "build_10000_ms": build_big * 1e3,
        "rank_10000_ms": per_call(Bm25Ranker(), big, 50) * 1e3,
        "decision_150_ms": asyncio.run(decisions(200)) * 1e3,
    }


# ---------------------------------------------------------------------------- the prompt-cache session


class TopicResponder:
    """Answers each turn by calling its tool once, then with a short text."""

    def __init__(self, clock: SimClock) -> None:
        self.clock = clock
        self.queue: list[Reply] = []

    def plan(self, tool_name: str, number: int) -> None:
        self.queue = [
            Reply([{"toolUse": {"toolUseId": f"t{number}", "name": tool_name, "input": {}}}]),
            Reply([{"text": f"Done with step {number}: the results are in."}]),
        ]

    def __call__(self, request: dict[str, Any]) -> Reply:
        self.clock.advance(8.0)
        return self.queue.pop(0) if self.queue else Reply([{"text": "done"}])


def session_turns(specs: list[dict[str, Any]], asked: list[tuple[str, str, bool]]) -> list[tuple[str, str]]:
    """40 turns: 8 topics (servers) of 5 lexical turns each, in a seeded drifting order."""
    rng = random.Random(SEED + 2)
    servers = list(SERVERS)
    by_server: dict[str, list[tuple[str, str]]] = {}
    index = {spec["name"]: i for i, spec in enumerate(specs)}
    for text, name, lexical in asked:
        if lexical:
            server = servers[min(index[name] * 7 // 150, 6)]
            by_server.setdefault(server, []).append((text, name))
    turns: list[tuple[str, str]] = []
    order = [rng.choice(servers) for _ in range(8)]
    for server in order:
        turns.extend(rng.sample(by_server[server], 5))
    return turns


def billed_session(specs: list[dict[str, Any]], turns: list[tuple[str, str]], *, hide: bool, caching: bool) -> float:
    clock = SimClock()
    cache = PromptCache(clock)
    responder = TopicResponder(clock)
    config: dict[str, Any] = {"context_window_limit": 200_000}
    if caching:
        config["cache_config"] = CacheConfig(strategy="auto")
    model = bedrock_model(cache, responder, **config)
    defaults = ContextManager(stash=False).strategies[:-1]  # "auto"'s (the emergency truncation comes back)
    strategies = [*defaults, Hide.tool_specs()] if hide else defaults
    try:
        manager = ContextManager(strategies=strategies, stash=False, clock=clock)  # type: ignore[call-arg]
    except TypeError:  # a manager that reads the module clock (simulated_clock below)
        manager = ContextManager(strategies=strategies, stash=False)
    simulated = getattr(prompt_cache, "simulated_clock", None)
    agent = Agent(
        model=model,
        tools=tools(specs),
        context_manager=manager,
        callback_handler=None,
        conversation_manager=None,
    )
    with simulated(clock) if simulated is not None else contextlib.nullcontext():
        for number, (text, name) in enumerate(turns):
            responder.plan(name, number)
            agent(text)
            clock.advance(30.0)
    return float(cache.billed())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the figures to this file")
    args = parser.parse_args()
    specs = catalog()
    asked = queries(specs)
    report: dict[str, Any] = {"recall": recall(specs, asked)}
    turns = session_turns(specs, asked)
    report["billed"] = {
        f"{'cached' if caching else 'uncached'}_{'hide' if hide else 'all'}": billed_session(
            specs, turns, hide=hide, caching=caching
        )
        for caching in (True, False)
        for hide in (False, True)
    }
    report["time"] = timing(specs)
    print(json.dumps(report, indent=2))
    if args.json:
        with open(args.json, "w") as out:
            json.dump(report, out, indent=2)


if __name__ == "__main__":
    main()
