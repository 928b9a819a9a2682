"""The ``sciembed`` command.

Heavy libraries (torch, transformers) are imported inside the sub-commands, so ``sciembed --help``
answers at once.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from . import __version__

logger = logging.getLogger("sciembed")

_DEFAULT_DATA = "../shared/data"


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.WARNING if args.quiet else logging.INFO,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        return args.run(args)
    except (ValueError, OSError) as error:  # bad input, missing files, unreachable Hub
        logger.error("%s", error)
        return 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sciembed",
        description="Scientific-document embeddings: embed papers, build model families and evaluate them on the field's benchmarks.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("-q", "--quiet", action="store_true", help="log warnings and errors only")
    commands = parser.add_subparsers(title="commands", required=True, metavar="COMMAND")

    embed = commands.add_parser(
        "embed",
        help="embed papers into a SciDocs-style .jsonl, .npy (+ .ids.json) or .parquet file",
        description=(
            "Embed the papers of a .jsonl / .json / .csv file (fields paper_id, title, abstract) with a model "
            "and write one vector per paper. The text of a paper is title + [SEP] + abstract (SPECTER). "
            "Output is written atomically; papers are encoded in shards kept in OUTPUT.partial/ so that an "
            "interrupted run continues with --resume."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    embed.add_argument("--model", help="Hub id or local folder (default: the embedded all-MiniLM-L6-v2)")
    embed.add_argument("--input", required=True, help="papers: .jsonl (one object a line), .json (list or id-keyed dict) or .csv")
    embed.add_argument("--output", required=True, help="embeddings: .jsonl ({paper_id, embedding} lines), .npy or .parquet")
    embed.add_argument("--id-field", help="field holding the paper id (default: first of paper_id, corpus_id, id, doc_id)")
    embed.add_argument("--skip-invalid", action="store_true", help="skip malformed, textless and duplicate records and report them, instead of stopping")
    embed.add_argument("--batch-size", type=int, default=32, help="texts per forward pass")
    embed.add_argument("--max-length", type=int, help="tokens per text (default: the model's limit, at most 512)")
    embed.add_argument("--pooling", choices=("cls", "mean"), help="pooling of a plain transformers model (default: cls); sentence-transformers models use their own")
    embed.add_argument("--task-format", choices=("classification", "regression", "proximity", "adhoc_query"),
                       help="format of a control-code model (default: the model's own default)")
    embed.add_argument("--domain", help="domain of a mixture-of-experts model with domain routing (one of its config's domains)")
    embed.add_argument("--device", help="cpu, cuda, cuda:1, ... (default: cuda when available, else cpu)")
    embed.add_argument("--shard-size", type=int, default=10_000, help="papers per shard saved for --resume")
    embed.add_argument("--resume", action="store_true", help="continue an interrupted run from its finished shards")
    embed.add_argument("--trust-remote-code", action="store_true", help="allow a Hub model to run its own modeling code")
    embed.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    embed.set_defaults(run=_embed)

    build = commands.add_parser(
        "from-bert",
        help="build a model family (multi2spe, control_code, moe_bert) from a BERT checkpoint and save it",
        description=(
            "Build one of sciembed's model families from any BERT checkpoint (SciBERT, SPECTER, SciNCL, the "
            "embedded MiniLM), copying every pretrained weight and initialising only what the family adds, "
            "and save it with its tokenizer, remote code and sentence-transformers files."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    build.add_argument("--family", required=True, choices=("multi2spe", "control_code", "moe_bert"))
    build.add_argument("--base", help="Hub id or local folder of a BERT model (default: the embedded all-MiniLM-L6-v2)")
    build.add_argument("--output", required=True, help="folder to save the model in")
    build.add_argument(
        "--set", action="append", default=[], metavar="FIELD=VALUE",
        help="a config field of the family, VALUE as JSON (e.g. --set num_cls_tokens=5 --set 'domains=[\"cs\",\"bio\"]'); repeatable",
    )
    build.set_defaults(run=_from_bert)

    evaluate = commands.add_parser(
        "evaluate",
        help="evaluate a model on SciDocs, SciRepEval, Multi-SciDocs, BEIR, co-citation pairs or CACM",
        description=(
            "Embed every paper (and query) a benchmark's tasks need once, score each task with the benchmark's "
            "reference protocol (SciDocs: -L2 ranking with pytrec_eval MAP/nDCG, LinearSVC macro-F1; SciRepEval: its "
            "task list, formats, few-shot and reviewer matching; BEIR: cosine nDCG@10 / recall@100; co-citation: "
            "F1max), print a table with the benchmark's averages and write the full results as JSON. A folder with "
            "only some of a benchmark's tasks evaluates those and lists the others. Vectors are cached per model "
            "and text (float32), so a second run or another benchmark sharing papers embeds nothing twice."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    evaluate.add_argument("--model", help="Hub id or local folder (default: the embedded all-MiniLM-L6-v2)")
    evaluate.add_argument("--benchmark", required=True, choices=("scidocs", "scirepeval", "multi-scidocs", "beir", "cocitation", "cacm"))
    evaluate.add_argument("--data", required=True, help="the benchmark's local folder or Hub dataset id (SciRepEval: a folder built by "
                          "datasets_scripts/build_scirepeval.py, or the metadata source allenai/scirepeval)")
    evaluate.add_argument("--test-data", help="SciRepEval only: the labels source when --data is the metadata source (default allenai/scirepeval_test)")
    evaluate.add_argument("--output", help="write the results as JSON here (atomically)")
    evaluate.add_argument("--tasks", nargs="+", help="task ids to run (e.g. cite mag; SciRepEval config names such as fos search)")
    evaluate.add_argument("--split", default="test", help="judged split to score (val to tune)")
    evaluate.add_argument("--domain", help="domain of a mixture-of-experts model with domain routing (one of its config's domains)")
    evaluate.add_argument("--pooling", choices=("cls", "mean"), help="pooling of a plain encoder; a sentence-transformers folder is then "
                          "read as a plain transformer (default: the model's own; CLS for BERT as SPECTER)")
    evaluate.add_argument("--proximity-similarity", choices=("l2", "min_facet_l2"), default="l2",
                          help="ranking score of proximity tasks: -L2 (the references) or Multi2SPE's min distance over facet pairs")
    evaluate.add_argument("--no-few-shot", action="store_true", help="skip SciRepEval's few-shot settings")
    evaluate.add_argument("--skip-invalid", action="store_true", help="drop rows naming papers without metadata and report them, instead of stopping")
    evaluate.add_argument("--batch-size", type=int, default=32, help="texts per forward pass")
    evaluate.add_argument("--max-length", type=int, help="tokens per text (default: the model's limit, at most 512)")
    evaluate.add_argument("--device", help="cpu, cuda, cuda:1, ... (default: cuda when available, else cpu)")
    evaluate.add_argument("--cache-dir", help="embedding cache folder (default: $SCIEMBED_CACHE or $HF_HOME/sciembed/embeddings)")
    evaluate.add_argument("--no-cache", action="store_true", help="keep vectors in memory for this run only")
    evaluate.add_argument("--jobs", type=int, default=-1, help="processes for the classifiers' grid searches (-1: all cores)")
    evaluate.add_argument("--seed", type=int, help="seed of what is sampled or trained while evaluating (default: CACM 0, SciDocs' recommender 7 as SciDocs)")
    evaluate.add_argument("--trust-remote-code", action="store_true", help="allow a Hub model to run its own modeling code")
    evaluate.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    evaluate.set_defaults(run=_evaluate)

    from .training.recipes import RECIPES

    train = commands.add_parser(
        "train",
        help="fine-tune a model with a paper's recipe (" + ", ".join(RECIPES) + ")",
        description=(
            "Train with one paper's recipe through a transformers Trainer: the recipe builds its model family from "
            "--base, makes its examples from --data, and uses the paper's loss and optimiser settings. Any setting can "
            "be overridden with --config FILE (YAML or JSON) and --set KEY=VALUE (KEY is section.name with section in "
            "model, embedding, data, loss, training, or a bare TrainingArguments field). Checkpoints go to "
            "OUTPUT/checkpoint-N (--resume continues from the latest), the model to OUTPUT/model and the settings and "
            "metrics to OUTPUT/train_results.json. Runs unchanged under `accelerate launch` or `torchrun`."
        ),
        epilog="recipes:\n" + "\n".join(f"  {r.name:16} {r.paper}: {r.notes}" for r in RECIPES.values()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    train.add_argument("--recipe", required=True, choices=tuple(RECIPES), help="the paper whose setting to reproduce")
    train.add_argument("--base", help="Hub id or local folder of a BERT model (default: the embedded all-MiniLM-L6-v2)")
    train.add_argument("--data", required=True, help="citation data (CACM folder, SPECTER release, S2ORC JSONL, SciRepEval "
                       "specter_small.json), SciRepEval's training samples folder, or labelled papers, as the recipe needs")
    train.add_argument("--output", required=True, help="folder for checkpoints, the trained model and train_results.json")
    train.add_argument("--config", help="YAML or JSON file of settings, nested by section or with dotted keys")
    train.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                       help="one setting, VALUE as JSON (e.g. --set max_steps=100 --set loss.margin=0.5 --set data.held_out=0.2); repeatable, applied after --config")
    train.add_argument("--resume", action="store_true", help="continue from the latest checkpoint in OUTPUT")
    train.add_argument("--evaluate-before", action="store_true", help="with held-out queries, also score the untrained model")
    train.set_defaults(run=_train)

    export = commands.add_parser(
        "export",
        help="write a Hub-ready folder of a saved model: safetensors, remote code, tokenizer, model card",
        description=(
            "Copy a saved model into a folder the Hugging Face Hub serves as it is: safetensors weights, config with "
            "auto_map and the remote-code files, tokenizer, sentence-transformers files, format adapters / PALs in their "
            "own layout, and a README.md model card rendered from hub_cards/ with the evaluation results (model-index) "
            "and the training run. The folder is then loaded in a fresh process without sciembed and the card's YAML "
            "parsed; it is written beside OUT and renamed when complete."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    _export_arguments(export)
    export.add_argument("--out", required=True, help="the folder to write (replaced if it exists)")
    export.set_defaults(run=_export)

    push = commands.add_parser(
        "push",
        help="export a model and upload it to the Hugging Face Hub",
        description=(
            "Export the model (as `sciembed export`) into --out (default: MODEL-hub) and upload that folder to the Hub "
            "with huggingface_hub.HfApi (create_repo, upload_folder). With HF_HUB_OFFLINE set it stops after the export "
            "with a message saying so; --dry-run stops there on purpose."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    _export_arguments(push)
    push.add_argument("--repo-id", required=True, help="the Hub repository, ORG/NAME")
    push.add_argument("--out", help="the folder to export to (default: MODEL-hub beside the model)")
    push.add_argument("--private", action="store_true", help="create the repository private")
    push.add_argument("--commit-message", help="the commit message (default: 'Upload <model_type> model with sciembed')")
    push.add_argument("--dry-run", action="store_true", help="export and validate, but do not upload")
    push.set_defaults(run=_push)

    demo = commands.add_parser(
        "demo",
        help="the main job of `make demo`: train, evaluate, export and reload a model on the embedded default",
        description=(
            "The whole life of a model in a few minutes on a CPU: fine-tune a Multi2SPEModel built from the embedded "
            "all-MiniLM-L6-v2 on SPECTER triplets from CACM's training query papers (sciembed train), print the held-out "
            "cite task before and after, export it with its model card (sciembed export), and load the export in a fresh "
            "Python without sciembed to embed two papers. Each step prints its command. Without DATA/cacm it runs on a "
            "small invented example set."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    demo.add_argument("--data", default=_DEFAULT_DATA, help="folder holding cacm/ (the shared data folder)")
    demo.add_argument("--output", default="demo-output", help="folder for the run, the exported model and its card")
    demo.add_argument("--steps", type=int, help="optimiser steps (default: 20 on CACM, 6 on the example set)")
    demo.set_defaults(run=_demo)

    neighbours = commands.add_parser(
        "neighbours",
        help="embed the CACM papers and show nearest neighbours and citation links",
        description=(
            "Embed the real CACM collection from DATA/cacm and print, for a few query papers, their nearest "
            "neighbours with titles, marking true citation links, and the share of citation links among the "
            "nearest neighbours of every linked paper. Without DATA/cacm it runs on a small invented example set."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    neighbours.add_argument("--data", help=f"folder holding cacm/ (default: {_DEFAULT_DATA} when it holds cacm/, else sciembed's "
                                           "small invented example set); a given folder without cacm/ is an error")
    neighbours.add_argument("--model", help="Hub id or local folder (default: the embedded all-MiniLM-L6-v2)")
    neighbours.add_argument("--queries", type=int, default=3, help="query papers to show")
    neighbours.add_argument("-k", type=int, default=10, help="neighbours per paper")
    neighbours.add_argument("--batch-size", type=int, default=32, help="texts per forward pass")
    neighbours.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    neighbours.set_defaults(run=_neighbours)
    return parser


def _embed(args: argparse.Namespace) -> int:
    from .data.papers import read_papers
    from .embed_job import embed_to_file
    from .embeddings_io import check_embedding_path, ids_path

    check_embedding_path(args.output)
    written = [Path(args.output)] + ([ids_path(args.output)] if Path(args.output).suffix.lower() == ".npy" else [])
    if Path(args.input).exists() and any(path.exists() and path.resolve() == Path(args.input).resolve() for path in written):
        raise ValueError(f"--output {args.output} would overwrite the input {args.input}; choose another output file")
    papers = read_papers(args.input, id_field=args.id_field, skip_invalid=args.skip_invalid)

    from .ensemble import load_encoder

    encoder = load_encoder(
        args.model,
        trust_remote_code=args.trust_remote_code,
        device=args.device,
        max_length=args.max_length,
        pooling=args.pooling,
        task_format=args.task_format,
        domain=args.domain,
    )
    report = embed_to_file(
        encoder,
        papers.papers,
        args.output,
        shard_size=args.shard_size,
        batch_size=args.batch_size,
        resume=args.resume,
        show_progress_bar=not args.no_progress,
    )
    logger.info(
        "wrote %d embeddings of dimension %d to %s (%d shard(s), %d resumed)",
        report.papers, report.dim, report.output, report.shards, report.resumed_shards,
    )
    if papers.skipped:
        logger.warning(
            "skipped %d invalid record(s) of %s:\n  %s", len(papers.skipped), papers.path, "\n  ".join(map(str, papers.skipped))
        )
    return 0


def _from_bert(args: argparse.Namespace) -> int:
    from .default_model import default_model_path
    from .families import from_bert, save_pretrained
    from .training.recipes import parse_assignments

    options = parse_assignments(args.set)
    model, tokenizer = from_bert(args.family, args.base or default_model_path(), **options)
    save_pretrained(model, tokenizer, args.output)
    logger.info("saved a %s model built from %s to %s", args.family, args.base or "the embedded all-MiniLM-L6-v2", args.output)
    return 0


def _evaluate(args: argparse.Namespace) -> int:
    from .evaluation import evaluate

    report = evaluate(
        args.model,
        args.benchmark,
        args.data,
        tasks=args.tasks,
        split=args.split,
        pooling=args.pooling,
        max_length=args.max_length,
        batch_size=args.batch_size,
        device=args.device,
        trust_remote_code=args.trust_remote_code,
        cache_dir=args.cache_dir,
        use_cache=not args.no_cache,
        skip_invalid=args.skip_invalid,
        test_data=args.test_data,
        few_shot=not args.no_few_shot,
        proximity_similarity=args.proximity_similarity,
        n_jobs=args.jobs,
        seed=args.seed,
        show_progress_bar=not args.no_progress,
        domain=args.domain,
    )
    print(report.table())
    if args.output:
        logger.info("wrote %s", report.write_json(args.output))
    return 0


def _train(args: argparse.Namespace) -> int:
    from .training.recipes import parse_assignments, read_overrides
    from .training.run import train

    overrides = {**(read_overrides(args.config) if args.config else {}), **parse_assignments(args.set)}
    summary = train(args.recipe, args.base, args.data, args.output, overrides, resume=args.resume, evaluate_before=args.evaluate_before)
    logger.info("trained %s for %d step(s) in %.0f s; model saved to %s", args.recipe, summary["global_step"], summary["seconds"], summary["model"])
    for name, value in summary["eval_metrics"].items():
        if name == "epoch":
            continue
        before = summary["base_eval_metrics"].get(name)
        logger.info("%s = %s%s", name, value, "" if before is None else f" (before training: {before})")
    return 0


def _export_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, help="a saved model folder (sciembed from-bert / train output)")
    parser.add_argument("--evaluation", action="append", default=[], metavar="JSON",
                        help="results written by `sciembed evaluate --output` (repeatable): the card's model-index "
                             "(default: MODEL/../held_out_evaluation.json of a training run, when it exists)")
    parser.add_argument("--training", help="the run's train_results.json (default: MODEL/../train_results.json when it exists)")
    parser.add_argument("--license", default="apache-2.0", help="the card's licence")
    parser.add_argument("--no-validate", action="store_true", help="skip the fresh-process load check")
    parser.add_argument("--trust-remote-code", action="store_true",
                        help="export (and run, to validate) Python files in MODEL that are not sciembed's own remote code; "
                             "without it such a folder is refused before any of its code runs")


def _export_model(args: argparse.Namespace, out: str, repo_id: str | None):
    from pathlib import Path

    from .hub.export import export_model
    from .training.run import EVALUATION_FILE, RESULTS_FILE

    held_out = Path(args.model).parent / EVALUATION_FILE
    paths = args.evaluation or ([held_out] if held_out.is_file() else [])
    evaluations = [_read_json(path, "--evaluation") for path in paths]
    training_path = Path(args.training) if args.training else Path(args.model).parent / RESULTS_FILE
    if args.training and not training_path.is_file():
        raise FileNotFoundError(f"{training_path}: no such training results file")
    training = _read_json(training_path, "--training") if training_path.is_file() else None
    report = export_model(args.model, out, evaluations=evaluations, training=training, repo_id=repo_id, license=args.license,
                          validate=not args.no_validate, trust_remote_code=args.trust_remote_code)
    for check in report.checks:
        logger.info("checked: %s", check)
    logger.info("wrote %d files to %s; model card: %s", len(report.files), report.folder, report.folder / "README.md")
    return report


def _read_json(path, option: str):
    import json
    from pathlib import Path

    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ValueError(f"{path} ({option}): not valid JSON (line {error.lineno}: {error.msg})") from None


def _export(args: argparse.Namespace) -> int:
    _export_model(args, args.out, None)
    return 0


def _push(args: argparse.Namespace) -> int:
    from .hub.push import push_folder

    out = args.out or f"{str(args.model).rstrip('/')}-hub"
    report = _export_model(args, out, args.repo_id)
    if args.dry_run:
        logger.info("--dry-run: %s is ready for %s and was not uploaded", report.folder, args.repo_id)
        return 0
    push_folder(report.folder, args.repo_id, private=args.private, commit_message=args.commit_message)
    return 0


def _demo(args: argparse.Namespace) -> int:
    from .demo import run_main_job

    run_main_job(args.data, args.output, steps=args.steps)
    return 0


def _neighbours(args: argparse.Namespace) -> int:
    from .neighbours import format_neighbours, run_neighbours

    from pathlib import Path

    data = args.data
    if data is None and (Path(_DEFAULT_DATA) / "cacm").is_dir():
        data = _DEFAULT_DATA
    result = run_neighbours(
        data,
        model=args.model,
        queries=args.queries,
        k=args.k,
        batch_size=args.batch_size,
        show_progress_bar=not args.no_progress,
    )
    print(format_neighbours(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
