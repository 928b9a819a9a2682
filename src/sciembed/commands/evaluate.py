"""``sciembed evaluate``: score a model on a benchmark or on your own data.

``sciembed evaluate``: a model on SciDocs, SciRepEval, Multi-SciDocs, BEIR, co-citation pairs, CACM, your own labelled
papers (a CSV) and relevance judgements (a qrels file) over a papers file, or MTEB's tasks (by name, or a local BEIR
folder).
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Any

from ..data.judgements import QRELS_COLUMNS
from ..evaluation.benchmarks import (
    BENCHMARK_NAMES,
    BENCHMARKS,
    Benchmark,
    Candidates,
    Reading,
    Similarity,
    benchmark_named,
    layouts_text,
    option_flags,
)
from .options import CACHE_OPTIONS, HelpFormatter, add_options, encoder_from_args, refuse_model_options

logger = logging.getLogger(__name__)


def add_parser(subcommands: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subcommands.add_parser(
        "evaluate",
        help="evaluate a model on SciDocs, SciRepEval, Multi-SciDocs, BEIR, co-citation pairs, CACM, your own "
        "labels / qrels, or MTEB tasks",
        description=(
            "Embed every paper (and query) a benchmark's tasks need once, score each task with the benchmark's "
            "reference protocol (SciDocs: -L2 ranking with pytrec_eval MAP/nDCG, LinearSVC macro-F1; SciRepEval: its "
            "task list, formats, few-shot and reviewer matching; BEIR: cosine nDCG@10 / recall@100; co-citation: "
            "F1max), print a table with the benchmark's averages and write the full results as JSON. Your own data "
            "needs no benchmark layout: --benchmark classification takes a labelled CSV (paper_id,label) and "
            "--benchmark retrieval a qrels file, each with --papers, scored with SciDocs' protocols. A folder with "
            "only some of a benchmark's tasks evaluates those and lists the others. --benchmark mteb runs MTEB's "
            "tasks by name (--tasks SCIDOCS ..., mteb downloads them from the Hub) or a local BEIR folder (--data) "
            "with mteb's own evaluators, the model embedding queries as search queries, documents as papers (title "
            "[SEP] abstract) and classification / clustering inputs in the classification format. Vectors are "
            "cached per model and text (float32), so a second run or another benchmark sharing papers embeds nothing "
            "twice."
        ),
        epilog="benchmarks (--benchmark) and what --data is, with an example of each:\n" + layouts_text("  "),
        formatter_class=HelpFormatter,
    )
    add_options(parser, "model")
    parser.add_argument(
        "--embeddings",
        help="score the vectors of this file instead of embedding with --model: .jsonl / .npy (+ .ids.json) / "
        ".parquet, or a folder of Parquet parts, as `sciembed embed` writes; it must hold every paper the tasks name. "
        "Text queries and other inputs that are not papers are embedded with the model named in the file's stamp "
        "(FILE.meta.json, written by embed); a --model given must be that model (checked), and a file without a "
        "stamp needs --model for them",
    )
    parser.add_argument(
        "--benchmark",
        required=True,
        choices=BENCHMARK_NAMES,
        metavar="BENCHMARK",
        help="what to evaluate on, and what --data is: "
        + "; ".join(f"{benchmark.name}: {benchmark.info.reads}" for benchmark in BENCHMARKS.values())
        + " (examples below)",
    )
    parser.add_argument(
        "--data",
        help="the benchmark's local folder or Hub dataset id (SciRepEval: a folder built by "
        "datasets_scripts/build_scirepeval.py, or the metadata source allenai/scirepeval); classification: the "
        "labels CSV; retrieval: the qrels file; mteb: a BEIR folder, or none with --tasks (required otherwise)",
    )
    parser.add_argument(
        "--papers",
        help="classification / retrieval: the papers the labels or judgements name (.jsonl, .json, "
        ".csv or .parquet with paper_id, title, abstract; a folder of Parquet parts; or a SMART collection such as "
        "CACM: a folder with a *.all file, or the file)",
    )
    parser.add_argument(
        "--queries",
        help="retrieval: text queries (.jsonl {_id|query_id|id, text} or .tsv id<TAB>text), embedded "
        "as search queries; a .jsonl query may be a facet of a paper ({query_id, paper_id, facet, text}: never "
        "ranking its paper, scored per facet); without it a query id is a paper of --papers, embedded as a paper",
    )
    parser.add_argument(
        "--candidates",
        choices=tuple(Candidates),
        help="retrieval: what a query ranks: all papers of --papers (the default; cosine, best 1,000; headline MAP, "
        "nDCG, nDCG@10, recall@100) or only its judged papers (SciDocs' -L2 protocol; headline MAP, nDCG; for qrels "
        "listing negatives); both also report R-precision and nDCG@k, P@k, recall@k (--cutoffs)",
    )
    parser.add_argument(
        "--cutoffs",
        nargs="+",
        type=int,
        metavar="K",
        help="the ranks k of the nDCG@k, P@k and recall@k that every ranking task reports beside its benchmark's "
        "own measures, MAP, nDCG and R-precision (default: 5 10 20 100; not for mteb)",
    )
    parser.add_argument(
        "--qrels-columns",
        choices=QRELS_COLUMNS,
        help="the order of a judgement file's query and document columns, when stated: query-document (as read, "
        "not checked) or document-query (read swapped back); unstated, the query comes first and a file whose shape "
        "says the columns are swapped (many more queries than distinct documents, or most queries without a relevant "
        "document) is refused",
    )
    parser.add_argument(
        "--test-size",
        type=float,
        help="classification without a split column: the share of each "
        "label held out for testing (stratified, seeded by --seed; default 0.5)",
    )
    parser.add_argument(
        "--id-field",
        help="classification / retrieval: the papers file's id field (default: first of paper_id, "
        "corpus_id, id, doc_id)",
    )
    parser.add_argument(
        "--test-data",
        help="SciRepEval only: the labels source when --data is the metadata source (default allenai/scirepeval_test)",
    )
    parser.add_argument(
        "--output", help="write the results as JSON here (atomically; an existing file is refused unless --overwrite)"
    )
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --output file")
    parser.add_argument(
        "--tasks",
        nargs="+",
        help="task ids to run (e.g. cite mag; SciRepEval config names such as fos search); mteb: MTEB task names "
        "(SCIDOCS SciFact ...), instead of --data",
    )
    parser.add_argument(
        "--split", default="test", help="judged split to score (val to tune; mteb: an evaluation split of each task)"
    )
    add_options(parser, "smart_links", "domain", "pooling")
    parser.set_defaults(smart_links=None)  # each benchmark that reads SMART links has its default
    parser.add_argument(
        "--proximity-similarity",
        choices=tuple(Similarity),
        help="ranking score of proximity tasks: -L2 (the references; the default) or Multi2SPE's min distance over "
        "facet pairs",
    )
    parser.add_argument("--no-few-shot", action="store_true", help="skip SciRepEval's few-shot settings")
    parser.add_argument(
        "--skip-invalid",
        action="store_true",
        help="drop rows naming papers without metadata (and invalid "
        "paper records) and report them, instead of stopping",
    )
    add_options(
        parser,
        "batch_size",
        "max_length",
        "device",
        "backend",
        "onnx_quantization",
        "int8_check_set",
        "int8_check_benchmark",
    )
    add_options(parser, "long_documents", "window_tokens", "window_overlap", "window_combine", "text_fields")
    add_options(parser, "cache_dir", "no_cache")
    parser.add_argument(
        "--jobs", type=int, default=-1, help="processes for the classifiers' grid searches (-1: all cores)"
    )
    parser.add_argument(
        "--seed",
        type=int,
        help="seed of what is sampled or trained while evaluating (default: CACM and a "
        "labels file's split 0, SciDocs' recommender 7 as SciDocs)",
    )
    add_options(parser, "trust_remote_code", "no_progress")
    parser.set_defaults(run=run)
    return parser


def run(args: argparse.Namespace) -> int:
    from ..data.papers import check_paper_source
    from ..evaluation import evaluate
    from ..evaluation.runner import check_text_fields, set_cutoffs
    from ..io import check_cache_dir, check_input, refuse_replacing_file

    # The cheap checks first: the options, the output and the cache, then the input; the model (minutes) last.
    benchmark = benchmark_named(args.benchmark)
    options = benchmark.options(_given_options(args))
    if args.output:
        refuse_replacing_file(args.output, overwrite=args.overwrite)
    if args.embeddings is not None:
        check_input(args.embeddings, "--embeddings", "any")
        _refuse_encoder_options(args, benchmark)
    if not args.no_cache:
        check_cache_dir(args.cache_dir)
    for option, path, kind in (("--papers", args.papers, "any"), ("--queries", args.queries, "file")):
        if path is not None:
            check_input(path, option, kind)
    if args.papers is not None:
        check_paper_source(args.papers, "--papers")
    if args.data is not None and (Path(args.data).exists() or Path(args.data).is_symlink()):
        check_input(args.data, "--data", "any")  # a local folder or file; anything else may be a Hub id
    reading = Reading(
        tasks=args.tasks,
        split=args.split,
        skip_invalid=args.skip_invalid,
        seed=args.seed,
        text_fields=args.text_fields,
        cutoffs=args.cutoffs,
    )
    suite = benchmark.read(args.data, reading, options)
    check_text_fields(suite, reading.text_fields)
    set_cutoffs(suite, reading.cutoffs)
    embedding: dict[str, Any] = {
        "batch_size": args.batch_size,
        "cache_dir": args.cache_dir,
        "use_cache": not args.no_cache,
        "show_progress_bar": not args.no_progress,
    }
    if args.embeddings is None:
        encoder = encoder_from_args(args)
    else:  # the vectors embed wrote; a model named is loaded (and checked against their stamp) when scoring starts
        encoder = (lambda: encoder_from_args(args)) if args.model else None
        embedding["embeddings"] = args.embeddings
    report = evaluate(encoder, suite, reading=reading, options=options, n_jobs=args.jobs, **embedding)
    print(report.table())
    if args.output:
        logger.info("wrote %s", report.write_json(args.output))
    return 0


def _given_options(args: argparse.Namespace) -> dict[str, Any]:
    """The benchmark options given on the command line, by name (``None``: not given)."""
    given = {}
    for name, flag in option_flags().items():
        value = getattr(args, flag.removeprefix("--").replace("-", "_"))
        given[name] = (False if value else None) if flag.startswith("--no-") else value
    return given


def _refuse_encoder_options(args: argparse.Namespace, benchmark: Benchmark) -> None:
    if not benchmark.reads_embedding_files:
        raise ValueError(
            f"--benchmark {benchmark.name} embeds its own texts through a model: give --model, not --embeddings"
        )
    if args.model is None:  # the stamp's model embeds what the file cannot hold, with its own settings
        refuse_model_options(args, f"--embeddings (the vectors are read from {args.embeddings})", keep=CACHE_OPTIONS)
