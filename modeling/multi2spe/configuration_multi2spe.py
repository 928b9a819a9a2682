"""Configuration of Multi²SPE (Seoh, Chang & McCallum, 2023)."""

from __future__ import annotations

from typing import Any, Optional

from transformers import BertConfig

REPARAMETERIZATION_INITS = ("identity", "literal")
CLS_ACTIVATIONS = ("tanh", None)
INITIALIZATIONS = ("base", "paper")
TEXT_POOLINGS = (None, "mean")


class Multi2SPEConfig(BertConfig):
    """A BERT configuration plus the multiple-CLS settings of Multi²SPE.

    Multi²SPE (Seoh, Chang & McCallum, "Encoding Multi-Domain Scientific Papers by Ensembling Multiple
    CLS Tokens", 2023, built on Multi-CLS BERT, Chang et al., ACL 2023) feeds K CLS tokens, ``[CLS]``
    followed by K−1 extra tokens, and passes the hidden state of the k-th CLS token through its own
    linear layer L_{l,k} after a few encoder layers l. Equation (1) re-parameterises the weights as
    W_{l,k} − (1/K) Σ_k' W_{l,k'} so that the K layers cannot collapse into one. The final CLS outputs
    c_1..c_K are summed into the paper embedding Σ_k c_k. Table 2's ablations (number of CLS tokens,
    no linear layer injection, no re-parameterisation) are the fields below.

    Args:
        num_cls_tokens: K, the number of CLS tokens including ``[CLS]``. Defaults to 3, the setting of
            the authors' training command (``--num_facets 3`` in the README of ronaldseoh/multi2spe).
        extra_cls_token_ids: the vocabulary ids of the K−1 tokens the model inserts right after
            ``[CLS]``. Filled by ``Multi2SPEModel.from_bert`` (``[unused1]``.. ``[unused{K-1}]`` as in the
            authors' ``utils.py``, or added tokens ``[CLS1]``.. when the vocabulary has no ``[unused*]``).
        linear_layers: 1-based numbers of the encoder layers after which the per-CLS linear layers sit.
            ``None`` (default) spreads three of them evenly over the depth: 4, 8, 12 for a 12-layer model
            as in the paper (the authors' ``--add_extra_facet_layers_after 3 7`` counts from 0, plus
            ``--add_extra_facet_layers`` after the last layer), 2, 4, 6 for 6 layers. ``[]`` is the
            "no linear layer injection" ablation. Layers before the last start as the identity, the
            last one starts as ``initialization`` says.
        reparameterize: apply equation (1) to the weights when K > 1 (default True). With K = 1 the
            formula would cancel the only layer, so it is skipped. As in the authors' ``custom_bert.py``
            only the weights are centred. Each L_{l,k} keeps its own bias.
        reparameterization_init: how equation (1) treats the identity-initialised layers.
            ``"identity"`` (default) uses I + W_{l,k} − (1/K) Σ_k' W_{l,k'}: the constant I does not change
            the gradients of equation (1), and identical identity inits then give exactly the identity, so
            the pretrained encoder's hidden states are unchanged at initialisation, as the paper intends.
            ``"literal"`` uses equation (1) as printed, which with identical identity inits gives a zero
            effective weight at step 0 (the CLS hidden states after those layers are just the biases, 0):
            this is what the authors' released code computes. The randomly initialised last layer uses
            equation (1) as printed either way.
        initialization: where the model starts.
            ``"base"`` (default): where its base is, so fine-tuning starts from the base's quality. The
            linear layers after the last layer start as the identity too (at zero with ``text_pooling="mean"``,
            below), with no activation after them.
            The extra CLS tokens start as copies of ``[CLS]`` (its word embedding, and position 0 for all
            K). And every CLS token's attention key carries the constant bias −log K, so K identical CLS
            tokens weigh in attention exactly as the one ``[CLS]`` of the base. At step 0 every CLS output
            then equals the base's ``[CLS]`` output and the paper embedding is K times it (the same
            ranking). The CLS tokens part ways as training moves their linear layers apart (eq. (1)).
            ``"paper"``: the construction of the paper and the authors' code: the last linear layers start
            random (BERT's normal(0, initializer_range)) followed by ``tanh``, and the extra CLS tokens are
            ``[unused*]`` tokens at positions 1..K−1, later tokens shifting by K−1. From all-MiniLM-L6-v2 this
            starts far below the base (``benchmarks/results/multi2spe_init.json``).
        cls_activation: ``"tanh"`` or ``None``: the activation applied to the CLS outputs after the last
            layer's linear layers, like BERT's pooler (dense + tanh) and the authors'
            ``--add_extra_facet_nonlinearity``. Defaults to ``"tanh"`` with ``initialization="paper"`` and
            ``None`` with ``"base"`` (tanh would change the base's embedding). Without linear layers after
            the last layer, c_k is the plain final hidden state.
        text_pooling: ``None`` (default, the paper's) or ``"mean"``. With ``"mean"`` each CLS output also
            carries 1/K of the mean of the final hidden states of ``[CLS]`` and the text tokens (padding and
            the inserted CLS tokens excluded): the embedding of a base that pools by mean, as
            sentence-transformers models such as all-MiniLM-L6-v2 do, whose ``[CLS]`` was never trained to
            embed the text. With ``initialization="base"`` the linear layers after the last layer then start
            at zero (the centred weights of equation (1), and zero biases), so at step 0 every c_k is 1/K of
            the base's mean-pooled embedding and Σ_k c_k is that embedding. What the CLS tokens add grows
            as they train. This departs from the paper, whose base (SciBERT) is read at ``[CLS]``.
        classifier_hidden_sizes: the hidden-layer sizes, each Linear + ReLU, of the SPECTROID classification head
            (Capuano et al.) that ``Multi2SPEForSequenceClassification`` puts on the paper embedding Σ_k c_k.
            ``[]`` (default) is a linear head. Unused by the encoder.
        **kwargs: every ``transformers.BertConfig`` field.
    """

    model_type = "multi2spe"

    def __init__(
        self,
        num_cls_tokens: int = 3,
        extra_cls_token_ids: Optional[list[int]] = None,
        linear_layers: Optional[list[int]] = None,
        reparameterize: bool = True,
        reparameterization_init: str = "identity",
        initialization: str = "base",
        cls_activation: Optional[str] = "default",
        classifier_hidden_sizes: Optional[list[int]] = None,
        text_pooling: Optional[str] = None,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        if num_cls_tokens < 1:
            raise ValueError(f"num_cls_tokens must be at least 1, got {num_cls_tokens}")
        if extra_cls_token_ids is not None and len(extra_cls_token_ids) != num_cls_tokens - 1:
            raise ValueError(
                f"extra_cls_token_ids must hold num_cls_tokens - 1 = {num_cls_tokens - 1} ids, "
                f"got {len(extra_cls_token_ids)}"
            )
        if linear_layers is not None:
            bad = [n for n in linear_layers if not 1 <= n <= self.num_hidden_layers]
            if bad or len(set(linear_layers)) != len(linear_layers):
                raise ValueError(
                    f"linear_layers must be distinct layer numbers in 1..{self.num_hidden_layers}, got {linear_layers}"
                )
        if reparameterization_init not in REPARAMETERIZATION_INITS:
            raise ValueError(
                f"reparameterization_init must be one of {REPARAMETERIZATION_INITS}, got {reparameterization_init!r}"
            )
        if initialization not in INITIALIZATIONS:
            raise ValueError(f"initialization must be one of {INITIALIZATIONS}, got {initialization!r}")
        if text_pooling not in TEXT_POOLINGS:
            raise ValueError(f"text_pooling must be one of {TEXT_POOLINGS}, got {text_pooling!r}")
        if (
            text_pooling == "mean"
            and initialization == "base"
            and linear_layers is not None
            and self.num_hidden_layers not in linear_layers
        ):
            raise ValueError(
                f'text_pooling="mean" with initialization="base" starts the linear layers after the last layer '
                f"({self.num_hidden_layers}) at zero, so linear_layers must include it, got {linear_layers}"
            )
        if cls_activation == "default":
            cls_activation = "tanh" if initialization == "paper" else None
        if cls_activation not in CLS_ACTIVATIONS:
            raise ValueError(f"cls_activation must be one of {CLS_ACTIVATIONS}, got {cls_activation!r}")
        self.num_cls_tokens = num_cls_tokens
        self.extra_cls_token_ids = None if extra_cls_token_ids is None else [int(i) for i in extra_cls_token_ids]
        self.linear_layers = None if linear_layers is None else sorted(int(n) for n in linear_layers)
        self.reparameterize = reparameterize
        self.reparameterization_init = reparameterization_init
        self.initialization = initialization
        self.cls_activation = cls_activation
        self.text_pooling = text_pooling
        self.classifier_hidden_sizes = [int(size) for size in classifier_hidden_sizes or []]
        if any(size < 1 for size in self.classifier_hidden_sizes):
            raise ValueError(f"classifier_hidden_sizes must be positive layer sizes, got {classifier_hidden_sizes}")

    def get_linear_layers(self) -> list[int]:
        """The 1-based layer numbers followed by per-CLS linear layers, resolving the ``None`` default."""
        if self.linear_layers is not None:
            return list(self.linear_layers)
        depth = self.num_hidden_layers
        return sorted({max(1, round(depth * i / 3)) for i in (1, 2, 3)})
