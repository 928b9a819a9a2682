"""``sciembed embed``: the embed job (:func:`sciembed.jobs.embed.embed_to_file`) from the command line. This module
parses its options and loads the model once the papers are read."""

from __future__ import annotations

import argparse

from ..data.papers import TEXT_FIELDS, PaperReading
from ..encode import Encoder
from ..jobs.embed import check_output, embed_to_file
from .options import HelpFormatter, add_options, encoder_from_args


def add_parser(subcommands: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subcommands.add_parser(
        "embed",
        help="embed papers into a SciDocs-style .jsonl, .npy (+ .ids.json) or .parquet file, "
        "or a folder of Parquet parts",
        description=(
            "Embed the papers of a .jsonl / .json / .csv / .parquet file (fields paper_id, title, abstract), a folder "
            "of Parquet parts or a SMART collection (CACM) with a model and write one vector per paper. The text of "
            "a paper is title + [SEP] + abstract (SPECTER). "
            "Vectors are cached as evaluate caches them (--cache-dir), so papers embedded by either command are not "
            "embedded again. Output is written atomically; papers are encoded in shards kept in OUTPUT.partial/ so "
            "that an "
            "interrupted run continues with --resume. Under `torchrun --nproc-per-node N` or `accelerate launch` each "
            "process encodes every N-th shard; SLURM array tasks pass --rank and --world-size instead."
        ),
        formatter_class=HelpFormatter,
    )
    add_options(parser, "model")
    parser.add_argument(
        "--input",
        required=True,
        help="papers: .jsonl (one object a line), .json (list or id-keyed dict), .csv or .parquet; a folder of "
        "Parquet parts; or a SMART collection such as CACM (a folder with a *.all file, or the file)",
    )
    parser.add_argument(
        "--output",
        required=True,
        help="embeddings: .jsonl ({paper_id, embedding} lines), .npy or .parquet file, or a name without a "
        "suffix for a folder of Parquet parts (datasets.load_dataset('parquet', data_dir=OUTPUT))",
    )
    parser.add_argument(
        "--id-field", help="field holding the paper id (default: first of paper_id, corpus_id, id, doc_id)"
    )
    parser.add_argument(
        "--skip-invalid",
        action="store_true",
        help="skip malformed, textless and duplicate records and report them, instead of stopping",
    )
    add_options(
        parser,
        "batch_size",
        "max_length",
        "pooling",
        "task_format",
        "domain",
        "device",
        "backend",
        "onnx_quantization",
        "int8_check_set",
        "int8_check_benchmark",
        "long_documents",
        "window_tokens",
        "window_overlap",
        "window_combine",
        "text_fields",
        "smart_links",
        "cache_dir",
        "no_cache",
    )
    parser.add_argument("--shard-size", type=int, default=10_000, help="papers per shard saved for --resume")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue an interrupted run from its finished shards (with any number of processes)",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing --output (refused otherwise, before the model is loaded)",
    )
    parser.add_argument(
        "--rank", type=int, help="this task's share without torchrun (e.g. $SLURM_ARRAY_TASK_ID); needs --world-size"
    )
    parser.add_argument(
        "--world-size",
        type=int,
        help="tasks sharing the job (e.g. $SLURM_ARRAY_TASK_COUNT); the task that "
        "finishes the last shard assembles the output",
    )
    add_options(parser, "trust_remote_code", "no_progress")
    parser.set_defaults(run=run)
    return parser


def run(args: argparse.Namespace) -> int:
    from ..data.papers import check_paper_source
    from ..distributed import end_distributed_run, init_from_environment, process_share
    from ..io import check_cache_dir, check_input, check_output_place

    check_input(args.input, "--input", "any")
    check_paper_source(args.input, "--input")
    if not args.no_cache:
        check_cache_dir(args.cache_dir)
    output = check_output(
        check_output_place(args.output), overwrite=args.overwrite, source=args.input, option="--output"
    )
    rank_device = init_from_environment() if args.rank is None else None

    def load() -> Encoder:  # after the input is read: a bad papers file fails before a long model load
        return encoder_from_args(args, device=rank_device)

    embed_to_file(
        load,
        args.input,
        output,
        shard_size=args.shard_size,
        batch_size=args.batch_size,
        resume=args.resume,
        overwrite=args.overwrite,
        share=process_share(args.rank, args.world_size),
        reading=PaperReading(args.id_field, args.skip_invalid, args.text_fields or TEXT_FIELDS, args.smart_links),
        cache_dir=args.cache_dir,
        use_cache=not args.no_cache,
        show_progress_bar=not args.no_progress,
    )
    end_distributed_run()
    return 0
