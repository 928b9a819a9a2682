"""The contract every model family keeps, stated once and run for each, as transformers' ``ModelTesterMixin``.

A family's test module writes a :class:`FamilyTester` (how to build the family from a BERT base, the variants and
selections to run, what it equals at step 0) and one class ``TestXContract(FamilyContract)`` that names it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
import torch
from helpers import PAPERS, run_without_sciembed
from transformers import AutoConfig, AutoTokenizer, BertConfig, BertModel, PreTrainedModel

import sciembed
from sciembed.families import REGISTRY, family_class, save_pretrained

#: The forward's texts: the papers as sciembed joins title and abstract.
TEXTS = [sciembed.paper_text(paper, "[SEP]") for paper in PAPERS]


@dataclass(frozen=True)
class Variant:
    """One way to build a family, and the selections it embeds with.

    Attributes:
        name: the variant's name in folder names and messages.
        options: the family's ``from_bert`` options.
        selections: ``PaperEncoder`` options, each choosing one embedding (``task_format``, ``domain``).
    """

    name: str
    options: dict[str, Any] = field(default_factory=dict)
    selections: tuple[dict[str, Any], ...] = ({},)


@dataclass(frozen=True)
class Start:
    """What a family's encoder gives at step 0, computed from its plain BERT base.

    Attributes:
        states: the expected ``last_hidden_state``.
        mask: the positions of ``states`` that are compared (and the output's ``attention_mask``, where it has one).
        embedding: the expected ``pooler_output``.
    """

    states: torch.Tensor
    mask: torch.Tensor
    embedding: torch.Tensor


@dataclass
class Built:
    """One variant built from the base, its weights moved off their start, saved, and run on :data:`TEXTS`."""

    variant: Variant
    model: PreTrainedModel
    tokenizer: Any
    folder: Path
    runs: list[tuple[dict[str, Any], dict[str, torch.Tensor], dict[str, Any], dict[str, torch.Tensor]]]


class FamilyTester:
    """How :class:`FamilyContract` builds, runs and compares one family."""

    #: The family's name in :data:`sciembed.families.REGISTRY`.
    family: ClassVar[str]
    #: The variants built, saved, exported and loaded.
    variants: ClassVar[tuple[Variant, ...]] = (Variant("default"),)
    #: The variants checked at step 0 (default: :attr:`variants`).
    start_variants: ClassVar[tuple[Variant, ...] | None] = None
    #: The base's depth.
    base_layers: ClassVar[int] = 2
    #: Config values other than the defaults, which a save and load must keep.
    config_example: ClassVar[dict[str, Any]] = {}
    #: The transformers Auto class that loads a saved folder, and the outputs of its forward that are compared.
    auto_class: ClassVar[str] = "AutoModel"
    output_names: ClassVar[tuple[str, ...]] = ("pooler_output", "last_hidden_state")
    #: Whether torch.export traces the family (else the dynamo exporter must name why not).
    dynamo_exports: ClassVar[bool] = True

    def build(self, base: str | BertModel, tokenizer: Any, variant: Variant) -> PreTrainedModel:
        """The family built from ``base``; ``tokenizer`` gains the family's tokens in place."""
        return family_class(self.family).from_bert(base, tokenizer=tokenizer, **variant.options)

    def save(self, model: PreTrainedModel, tokenizer: Any, folder: Path) -> None:
        """Save ``model`` and ``tokenizer`` as a user would."""
        save_pretrained(model, tokenizer, folder)

    def encoder(self, model: PreTrainedModel) -> PreTrainedModel:
        """The module whose ``pooler_output`` is the paper embedding."""
        return model

    def inputs(self, model: PreTrainedModel, tokenizer: Any, selection: dict[str, Any]) -> tuple[dict, dict]:
        """The forward's tensors for :data:`TEXTS` under ``selection``, and its other keyword arguments."""
        return dict(tokenizer(TEXTS, padding=True, return_tensors="pt")), dict(selection)

    def start(self, bert: BertModel, tokenizer: Any, model: PreTrainedModel, selection: dict[str, Any]) -> Start:
        """What the family built from ``bert`` gives at step 0, where its paper says it starts."""
        raise NotImplementedError


def random_bert(tokenizer_folder: Path, layers: int, attn_implementation: str = "sdpa") -> BertModel:
    """A random BERT (hidden 32) over the vocabulary in ``tokenizer_folder``, with ``layers`` layers."""
    config = BertConfig.from_pretrained(
        tokenizer_folder, num_hidden_layers=layers, attn_implementation=attn_implementation
    )
    torch.manual_seed(1)
    return BertModel(config).eval()


def settings(config: Any) -> dict[str, Any]:
    """A config's entries that differ from the defaults, less ``use_cache`` (which transformers turns off on save)."""
    return {key: value for key, value in config.to_diff_dict().items() if key != "use_cache"}


class FamilyContract:
    """What every family promises: its tests, written once; a subclass sets :attr:`tester`."""

    tester: ClassVar[FamilyTester]

    @pytest.fixture(scope="class")
    @classmethod
    def base(cls, tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
        """A random BERT of the tester's depth with the tiny BERT's tokenizer, saved to disk."""
        folder = tmp_path_factory.mktemp(f"{cls.tester.family}-base")
        AutoTokenizer.from_pretrained(tiny_bert).save_pretrained(folder)
        random_bert(tiny_bert, cls.tester.base_layers).save_pretrained(folder)
        return folder

    @pytest.fixture(scope="class")
    @classmethod
    def built(cls, base: Path, tmp_path_factory: pytest.TempPathFactory) -> list[Built]:
        """Each variant with random weights where it starts as its base, so no skipped weight passes unseen."""
        result = []
        for variant in cls.tester.variants:
            tokenizer = AutoTokenizer.from_pretrained(base)
            torch.manual_seed(0)
            model = cls.tester.build(str(base), tokenizer, variant)
            with torch.no_grad():
                for parameter in model.parameters():
                    parameter.add_(torch.randn_like(parameter) * 0.05)
            model.eval()
            folder = tmp_path_factory.mktemp(f"{cls.tester.family}_{variant.name}".replace("-", "_")) / "model"
            cls.tester.save(model, tokenizer, folder)
            runs = []
            for selection in variant.selections:
                features, kwargs = cls.tester.inputs(model, tokenizer, selection)
                with torch.no_grad():
                    output = model(**features, **kwargs)
                runs.append((selection, features, kwargs, {name: output[name] for name in cls.tester.output_names}))
            result.append(Built(variant, model, tokenizer, folder, runs))
        return result

    def test_config_round_trip(self, tmp_path: Path) -> None:
        """A config saved and loaded keeps every value of the family's own."""
        config_class = config_class_of(self.tester.family)
        config = config_class(**self.tester.config_example)
        config.save_pretrained(tmp_path)
        loaded = AutoConfig.from_pretrained(tmp_path)
        assert type(loaded) is config_class
        for key, value in self.tester.config_example.items():
            assert getattr(loaded, key) == value, key
        assert loaded.to_diff_dict() == config.to_diff_dict()

    def test_saved_folder_holds_the_remote_code(self, built: list[Built]) -> None:
        """A saved folder maps the Auto classes to the code beside it, with safetensors weights."""
        family = REGISTRY[self.tester.family]
        for run in built:
            config = json.loads((run.folder / "config.json").read_text())
            assert config["model_type"] == family.name and config["architectures"] == [type(run.model).__name__]
            assert config["auto_map"] == self._auto_map()
            assert all((run.folder / name).is_file() for name in family.remote_code)
            assert (run.folder / "model.safetensors").is_file() and not list(run.folder.glob("*.bin"))

    def test_reload_gives_the_same_model(self, built: list[Built]) -> None:
        """The registered Auto class loads a saved folder to the same class, config and outputs."""
        import transformers

        for run in built:
            loaded = getattr(transformers, self.tester.auto_class).from_pretrained(run.folder).eval()
            assert type(loaded) is type(run.model), run.variant.name
            assert settings(loaded.config) == settings(run.model.config), run.variant.name
            for _, features, kwargs, expected in run.runs:
                with torch.no_grad():
                    output = loaded(**features, **kwargs)
                for name, value in expected.items():
                    assert torch.equal(output[name], value), (run.variant.name, name)

    @pytest.mark.parametrize("attn_implementation", ["sdpa", "eager"])
    def test_starts_where_the_base_is(self, base: Path, attn_implementation: str) -> None:
        """Built from BERT, the family embeds at step 0 as its paper says, with either attention."""
        for variant in self.tester.start_variants or self.tester.variants:
            bert = random_bert(base, self.tester.base_layers, attn_implementation)
            tokenizer = AutoTokenizer.from_pretrained(base)
            model = self.tester.build(bert, tokenizer, variant).eval()
            assert model.config._attn_implementation == attn_implementation
            for selection in variant.selections:
                features, kwargs = self.tester.inputs(model, tokenizer, selection)
                with torch.no_grad():
                    start = self.tester.start(bert, tokenizer, model, selection)
                    output = self.tester.encoder(model)(**features, **kwargs)
                message = f"{variant.name} {selection}"
                if "attention_mask" in output:
                    assert torch.equal(output.attention_mask.bool(), start.mask), message
                assert output.last_hidden_state.shape == start.states.shape, message
                torch.testing.assert_close(
                    output.last_hidden_state[start.mask], start.states[start.mask], atol=1e-5, rtol=0, msg=message
                )
                torch.testing.assert_close(output.pooler_output, start.embedding, atol=1e-5, rtol=0, msg=message)

    def test_encode_gives_the_forward_embedding(self, built: list[Built]) -> None:
        """``sciembed.encode`` of the model and of its folder gives the forward's ``pooler_output``."""
        for run in built:
            encoder = self.tester.encoder(run.model)
            for selection, features, kwargs, _ in run.runs:
                with torch.no_grad():
                    expected = encoder(**features, **kwargs).pooler_output.numpy()
                options = {"batch_size": 2, "show_progress_bar": False, **selection}
                in_memory = sciembed.encode(encoder, PAPERS, tokenizer=run.tokenizer, **options)
                np.testing.assert_allclose(in_memory, expected, atol=1e-5, rtol=0)
                np.testing.assert_allclose(sciembed.encode(run.folder, PAPERS, **options), expected, atol=1e-5, rtol=0)

    @pytest.mark.parametrize("line", ["current", "4.57.6"])
    def test_an_export_loads_as_remote_code_without_sciembed(self, built: list[Built], line: str, tmp_path: Path):
        """An export loads as remote code where sciembed is absent, on both transformers lines, to the same outputs."""
        from sciembed.hub.export import export_model

        jobs, expected = [], {}
        for index, run in enumerate(built):
            hub = tmp_path / f"{self.tester.family}_{index}_hub"  # remote code is cached under the folder's name
            export_model(run.folder, hub, validate=False)
            for number, (_, features, kwargs, outputs) in enumerate(run.runs):
                out = str(tmp_path / f"{index}-{number}")
                np.savez(f"{out}.in.npz", **{k: v.numpy() for k, v in features.items()})
                jobs.append([str(hub), kwargs, out])
                expected[out] = (run.tokenizer(TEXTS, padding=True, return_tensors="np")["input_ids"], outputs)
        arguments = [self.tester.auto_class, json.dumps(list(self.tester.output_names)), json.dumps(jobs)]
        arguments.append(json.dumps(TEXTS))
        version = run_without_sciembed(REMOTE, tmp_path, *arguments, line=line).split()[-1]
        assert version.startswith("5.") if line == "current" else version == line
        for out, (tokenized, outputs) in expected.items():
            remote = np.load(f"{out}.npz")
            assert str(remote["class_name"]) == type(built[0].model).__name__
            np.testing.assert_array_equal(remote["input_ids"], tokenized)  # the saved tokenizer, as sciembed's
            for name, value in outputs.items():
                np.testing.assert_allclose(remote[name], value.numpy(), atol=1e-6, rtol=0, err_msg=f"{out} {name}")

    def test_onnx_gives_pytorch_s_vectors(self, built: list[Built], tmp_path: Path) -> None:
        """Each selection gives PyTorch's vectors on ONNX Runtime."""
        pytest.importorskip("onnxruntime", reason="the onnx extra is not installed: pip install -e '.[onnx]'")
        from test_onnx_backend import both

        self._check_backend(built, both, tmp_path)

    def test_openvino_gives_pytorch_s_vectors(self, built: list[Built], tmp_path: Path) -> None:
        """Each selection gives PyTorch's vectors on OpenVINO."""
        pytest.importorskip("openvino", reason="the openvino extra is not installed: pip install -e '.[openvino]'")
        pytest.importorskip("nncf", reason="the openvino extra is not installed: pip install -e '.[openvino]'")
        from test_openvino_backend import both

        self._check_backend(built, both, tmp_path)

    def test_dynamo_exports_or_names_why_not(self, built: list[Built], tmp_path: Path) -> None:
        """The dynamo exporter gives PyTorch's vectors, or names why not and TorchScript exports."""
        pytest.importorskip("onnxscript", reason="the onnx extra is not installed: pip install -e '.[onnx]'")
        from test_onnx_backend import assert_dynamo_export

        from sciembed import onnx_backend

        run = built[-1]
        encoder = sciembed.PaperEncoder.from_pretrained(run.folder, device="cpu", **run.variant.selections[-1])
        if self.tester.dynamo_exports:
            assert_dynamo_export(encoder, tmp_path / "dynamo.onnx")
            return
        message = r"does not export to ONNX with the dynamo exporter: \w+: .+; export it with exporter='torchscript'"
        with pytest.raises(onnx_backend.OnnxExportError, match=message):
            onnx_backend.export_encoder(encoder, tmp_path / "dynamo.onnx", exporter="dynamo")
        assert onnx_backend.export_encoder(encoder, tmp_path / "plain.onnx")["exporter"] == "torchscript"

    def _auto_map(self) -> dict[str, str]:
        """The ``auto_map`` a saved folder of the family holds."""
        family = REGISTRY[self.tester.family]
        config_class = config_class_of(family.name).__name__
        classes = {"AutoConfig": f"configuration_{family.name}.{config_class}"}
        encoder = family.model_class or f"{config_class.removesuffix('Config')}Model"
        classes["AutoModel"] = f"modeling_{family.name}.{encoder}"
        if self.tester.auto_class != "AutoModel":
            classes[self.tester.auto_class] = f"modeling_{family.name}.{family.classifier_class}"
        return classes

    @staticmethod
    def _check_backend(built: list[Built], load: Any, tmp_path: Path) -> None:
        """Each selection gives PyTorch's vectors on the backend, from an export of its own, and embeds apart."""
        from test_onnx_backend import TEXTS as BACKEND_TEXTS
        from test_onnx_backend import assert_same_vectors

        for run in built:
            cache = tmp_path / run.variant.name
            vectors = []
            for selection in run.variant.selections:
                pytorch, exported = load(run.folder, cache, **selection)
                assert_same_vectors(pytorch, exported)
                vectors.append(exported.encode(BACKEND_TEXTS, show_progress_bar=False))
            [engine_folder] = cache.iterdir()  # onnx/ or openvino/, one export per selection inside
            assert len(list(engine_folder.iterdir())) == len(vectors)
            assert all(not np.allclose(a, b) for i, a in enumerate(vectors) for b in vectors[i + 1 :])


def config_class_of(family: str) -> type:
    """The config class of ``family``, read from its classifier (every family has one)."""
    import importlib

    from sciembed.families import register_families

    register_families()
    module = importlib.import_module(f"sciembed.modeling.{family}")
    return getattr(module, REGISTRY[family].classifier_class).config_class


#: Loads each exported folder with the Auto class, checks its tokenizer and saves the outputs on the given inputs.
REMOTE = """
import json, sys
import numpy as np, torch, transformers
auto_class, names, jobs, texts = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3]), json.loads(sys.argv[4])
for folder, kwargs, out in jobs:
    model = getattr(transformers, auto_class).from_pretrained(folder, trust_remote_code=True).eval()
    assert type(model).__module__.startswith("transformers_modules"), type(model).__module__
    ids = transformers.AutoTokenizer.from_pretrained(folder)(texts, padding=True, return_tensors="np")["input_ids"]
    features = {key: torch.from_numpy(value) for key, value in np.load(out + ".in.npz").items()}
    with torch.no_grad():
        output = model(**features, **kwargs)
    arrays = {name: output[name].numpy() for name in names}
    np.savez(out + ".npz", class_name=type(model).__name__, input_ids=ids, **arrays)
print(transformers.__version__)
"""
