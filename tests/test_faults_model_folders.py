"""Model folders that do not fit (issue 51, items 12 and 13): a window a folder sets that no paper fits in, and
weights that do not cover the config, are refused in one line naming the file or folder, for every command and
both loading paths; what is normal (no limit set, a pretraining checkpoint's heads, no pooler) still loads."""

from __future__ import annotations

import json
import shutil

import pytest
from helpers import PAPERS

from sciembed.cli import main
from sciembed.io import read_embeddings


def _papers(tmp_path):
    path = tmp_path / "papers.jsonl"
    path.write_text("".join(json.dumps({**PAPERS[i % len(PAPERS)], "paper_id": f"p{i}"}) + "\n" for i in range(12)))
    return path


def _set(folder, filename, key, value):
    path = folder / filename
    settings = json.loads(path.read_text()) if path.is_file() else {}
    path.write_text(json.dumps({**settings, key: value}))


def _command(command, model, tmp_path, *extra):
    """The argv of ``command`` with ``model`` on the tiny papers (and citations, qrels), writing under tmp_path."""
    papers = _papers(tmp_path)
    (tmp_path / "cites.csv").write_text("citing,cited\n" + "".join(f"p{i},p{(i + 1) % 12}\n" for i in range(12)))
    (tmp_path / "qrels.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"p{i}\tp{i + 1}\t1\n" for i in range(11))
    )
    out = tmp_path / "out"
    return {
        "embed": ["embed", "--model", str(model), "--input", str(papers), "--output", f"{out}.jsonl", *extra],
        "neighbours": ["neighbours", "--model", str(model), "--papers", str(papers), "--output", f"{out}.csv", *extra],
        "evaluate": [
            *("evaluate", "--model", str(model), "--benchmark", "retrieval", "--data", str(tmp_path / "qrels.tsv")),
            *("--papers", str(papers), "--no-cache", "--output", f"{out}.json", *extra),
        ],
        "from-bert": ["from-bert", "--family", "multi2spe", "--base", str(model), "--output", str(out), *extra],
        "export": ["export", "--model", str(model), "--out", str(out), *extra],
        "train": [
            *("train", "--recipe", "specter", "--base", str(model), "--papers", str(papers)),
            *("--citations", str(tmp_path / "cites.csv"), "--output", str(out), "--set", "max_steps=1"),
            *("--set", "per_device_train_batch_size=4", "--set", "save_strategy=no", *extra),
        ],
    }[command] + ([] if command in ("from-bert", "export") else ["--no-progress"])


# Item 12: windows ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "loader, filename, key, value",
    [
        ("plain", "tokenizer_config.json", "model_max_length", 2),
        ("plain", "tokenizer_config.json", "model_max_length", -1),
        ("plain", "tokenizer_config.json", "model_max_length", 0),
        ("plain", "tokenizer_config.json", "model_max_length", 3.5),
        ("plain", "tokenizer_config.json", "model_max_length", "512"),
        ("st", "sentence_bert_config.json", "max_seq_length", 2),
        ("st", "sentence_bert_config.json", "max_seq_length", -1),
        ("st", "tokenizer_config.json", "model_max_length", 4),
        ("st --pooling cls", "tokenizer_config.json", "model_max_length", 1),
    ],
)
def test_a_window_no_paper_fits_in_is_refused_naming_its_file(
    tiny_bert, tiny_st_base, tmp_path, caplog, loader, filename, key, value
):
    folder = shutil.copytree(tiny_bert if loader == "plain" else tiny_st_base, tmp_path / "model")
    _set(folder, filename, key, value)
    pooling = ["--pooling", "cls"] if "pooling" in loader else []
    assert main(_command("embed", folder, tmp_path, *pooling)) == 2
    assert f"{folder / filename}: {key} is {value!r}" in caplog.text and "--max-length" in caplog.text
    assert "Traceback" not in caplog.text and not (tmp_path / "out.jsonl").exists() and not (tmp_path / "out").exists()
    assert main(_command("embed", folder, tmp_path, *pooling, "--max-length", "16")) == 0  # the remedy named


@pytest.mark.parametrize("command", ["neighbours", "evaluate", "train", "from-bert", "export"])
@pytest.mark.parametrize("value", [2, "abc"])
def test_every_command_refuses_a_window_no_paper_fits_in(tiny_bert, tmp_path, caplog, command, value):
    folder = shutil.copytree(tiny_bert, tmp_path / "model")
    _set(folder, "tokenizer_config.json", "model_max_length", value)
    assert main(_command(command, folder, tmp_path)) == 2
    assert f"{folder / 'tokenizer_config.json'}: model_max_length is {value!r}: " in caplog.text
    assert "Traceback" not in caplog.text and not (tmp_path / "out").exists()


def test_a_route_s_window_no_paper_fits_in_is_refused_naming_its_file(tiny_bert, tmp_path, caplog):
    from sciembed.encoders.router import add_format_routes
    from sciembed.families import from_bert, save_pretrained

    folder = save_pretrained(*from_bert("control_code", tiny_bert), tmp_path / "routes")
    add_format_routes(folder)
    route = next(iter(json.loads((folder / "router_config.json").read_text())["types"]))
    config = next(folder.glob(f"**/{route}/task_format_config.json")).relative_to(folder)
    _set(folder, str(config), "max_seq_length", 2)
    assert main(_command("embed", folder, tmp_path)) == 2
    assert f"{config}: max_seq_length is 2: below 8 tokens" in caplog.text


@pytest.mark.parametrize(
    "loader, filename, key, window",
    [
        ("plain", "tokenizer_config.json", "model_max_length", 64),
        ("st", "sentence_bert_config.json", "max_seq_length", 48),
    ],
)
def test_a_window_that_means_no_limit_takes_the_model_s_own(
    tiny_bert, tiny_st_base, tmp_path, loader, filename, key, window
):
    """1e30 is transformers' "no limit": the positions (64), or the tokenizer's own window (48)."""
    import sciembed

    folder = shutil.copytree(tiny_bert if loader == "plain" else tiny_st_base, tmp_path / "model")
    _set(folder, filename, key, 1e30)
    assert sciembed.PaperEncoder.from_pretrained(folder, pooling="cls", device="cpu").max_length == window
    assert main(_command("embed", folder, tmp_path, "--pooling", "cls")) == 0


@pytest.mark.parametrize(
    "command, setting", [("embed", ["--max-length", "2"]), ("train", ["--set", "embedding.max_length=2"])]
)
def test_a_max_length_that_holds_only_the_special_tokens_is_refused(tiny_bert, tmp_path, caplog, command, setting):
    assert main(_command(command, tiny_bert, tmp_path, *setting)) == 2
    assert "2 leaves no room for text: the tokenizer adds 2 special token(s)" in caplog.text
    assert "Traceback" not in caplog.text


def test_one_token_of_text_is_enough(tiny_bert, tmp_path):
    assert main(_command("embed", tiny_bert, tmp_path, "--max-length", "3")) == 0
    assert len(read_embeddings(tmp_path / "out.jsonl")[0]) == 12


# Item 13: weights that do not cover the config -------------------------------------------------------------


@pytest.mark.parametrize(
    "change, expected",
    [
        (
            {"num_hidden_layers": 3},
            "weight(s) the config asks for are not in the checkpoint and would start at random (encoder.layer.2.",
        ),
        (
            {"num_hidden_layers": 1},
            "weight(s) of the checkpoint have no place in the model and would be dropped (encoder.layer.1.",
        ),
        (
            {"intermediate_size": 40},
            "differ in shape (encoder.layer.0.intermediate.dense.bias (37,) saved vs (40,) configured",
        ),
    ],
)
@pytest.mark.parametrize("loader", ["plain", "st", "train", "from-bert", "export"])
def test_weights_that_do_not_cover_the_config_are_refused(
    tiny_bert, tiny_st_base, tmp_path, caplog, change, expected, loader
):
    folder = shutil.copytree(tiny_st_base if loader == "st" else tiny_bert, tmp_path / "model")
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, **change}))
    assert main(_command(loader if loader in ("train", "from-bert", "export") else "embed", folder, tmp_path)) == 2
    assert f"{folder}: its weights do not fit its config.json: " in caplog.text and expected in caplog.text
    assert "Traceback" not in caplog.text and not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize(
    "in_features, out_features, expected",
    [
        (
            64,
            8,
            r"/modules.json: its modules \(Transformer -> Pooling -> Dense\) do not fit one another: mat1 and mat2",
        ),
        (32, 16, r": Dense's weights do not fit its settings \(size mismatch for linear.weight"),
        (32, 8, None),
    ],
)
def test_a_dense_module_that_does_not_fit_is_refused(
    tiny_st_base, tmp_path, caplog, in_features, out_features, expected
):
    import re

    import torch
    from sentence_transformers.sentence_transformer.modules import Dense

    folder = shutil.copytree(tiny_st_base, tmp_path / "model")
    torch.manual_seed(0)
    (folder / "2_Dense").mkdir()
    Dense(in_features, 8).save(str(folder / "2_Dense"))
    settings = json.loads((folder / "2_Dense" / "config.json").read_text())
    (folder / "2_Dense" / "config.json").write_text(json.dumps({**settings, "out_features": out_features}))
    modules = json.loads((folder / "modules.json").read_text())[:2]
    modules.append({"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"})
    (folder / "modules.json").write_text(json.dumps(modules))
    assert main(_command("embed", folder, tmp_path)) == (0 if expected is None else 2)
    assert expected is None or re.search(re.escape(str(folder)) + expected, caplog.text)


def test_a_pretraining_checkpoint_and_one_without_a_pooler_load(tiny_bert, tmp_path):
    """BERT's pretraining heads (``cls.*``, under ``bert.``) have no place in the encoder, and its pooler is
    never read: both are normal."""
    from transformers import AutoTokenizer, BertConfig, BertForPreTraining, BertModel

    config, tokenizer = BertConfig.from_pretrained(tiny_bert), AutoTokenizer.from_pretrained(tiny_bert)
    for name, model in [
        ("pretraining", BertForPreTraining(config)),
        ("no-pooler", BertModel(config, add_pooling_layer=False)),
    ]:
        model.save_pretrained(tmp_path / name)
        tokenizer.save_pretrained(tmp_path / name)
        assert main(_command("embed", tmp_path / name, tmp_path, "--overwrite")) == 0


def test_an_encoder_decoder_saved_as_its_encoder_is_checked_as_that_encoder(tmp_path):
    """sentence-transformers' T5 models save ``T5EncoderModel``: the decoder ``AutoModel`` builds is not missing."""
    import json

    from transformers import T5Config, T5EncoderModel

    from sciembed.checkpoint_weights import check_weights_fit

    T5EncoderModel(T5Config(vocab_size=64, d_model=16, d_kv=8, d_ff=24, num_layers=2, num_heads=2)).save_pretrained(
        tmp_path / "t5"
    )
    check_weights_fit(str(tmp_path / "t5"))
    config = json.loads((tmp_path / "t5" / "config.json").read_text())
    (tmp_path / "t5" / "config.json").write_text(json.dumps({**config, "num_layers": 3}))
    with pytest.raises(
        ValueError, match=r"t5: its weights do not fit its config\.json: \d+ weight\(s\).*encoder\.block\.2"
    ):
        check_weights_fit(str(tmp_path / "t5"))


# A sentence-transformers folder whose transformer sits in a subfolder ------------------------------------------


def _older_layout(tiny_st_base, tmp_path):
    """``tiny_st_base`` saved as older sentence-transformers releases save it: the transformer in 0_Transformer/."""
    folder = shutil.copytree(tiny_st_base, tmp_path / "model")
    (folder / "0_Transformer").mkdir()
    for name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"):
        (folder / name).rename(folder / "0_Transformer" / name)
    (folder / "sentence_bert_config.json").rename(folder / "0_Transformer" / "sentence_bert_config.json")
    modules = json.loads((folder / "modules.json").read_text())
    modules[0].update(path="0_Transformer", type="sentence_transformers.models.Transformer")
    (folder / "modules.json").write_text(json.dumps(modules))
    return folder


@pytest.mark.parametrize("command", ["from-bert", "train", "embed"])
def test_a_transformer_in_a_module_subfolder_is_found_through_modules_json(tiny_st_base, tmp_path, command):
    folder = _older_layout(tiny_st_base, tmp_path)
    extra = ("--pooling", "cls") if command == "embed" else ()
    assert main(_command(command, folder, tmp_path, *extra)) == 0
    if command == "train":
        embedding = json.loads((tmp_path / "out" / "train_results.json").read_text())["settings"]["embedding"]
        assert embedding["pooling"] == "mean" and embedding["max_length"] == 48


def test_a_first_module_that_is_no_transformer_is_refused_naming_it(tiny_st_base, tmp_path, caplog):
    folder = _older_layout(tiny_st_base, tmp_path)
    (folder / "0_Transformer" / "config.json").unlink()
    assert main(_command("from-bert", folder, tmp_path)) == 2
    assert f"{folder}/modules.json: its first module (0_Transformer) holds no config.json" in caplog.text


def test_export_of_a_transformer_in_a_module_subfolder_says_how_to_save_it_anew(tiny_st_base, tmp_path, caplog):
    folder = _older_layout(tiny_st_base, tmp_path)
    assert main(_command("export", folder, tmp_path, "--no-validate")) == 2
    assert f"{folder}: its transformer sits in 0_Transformer/ (the layout older sentence-transformers" in caplog.text
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("damage", ['{"version": "1.0", "trunc', "{}"])
@pytest.mark.parametrize("command", ["embed", "export", "train"])
def test_a_damaged_tokenizer_json_is_named(tiny_bert, tmp_path, caplog, damage, command):
    model = tmp_path / "model"
    shutil.copytree(tiny_bert, model)
    (model / "tokenizer.json").write_text(damage)
    assert main(_command(command, model, tmp_path)) == 2
    assert "model/tokenizer.json" in caplog.text
    assert ("malformed JSON" if damage != "{}" else "not a tokenizers file (no 'model' entry)") in caplog.text
    assert not (tmp_path / "out").exists() and not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize("command", ["embed", "evaluate"])
def test_a_folder_without_its_weights_file_is_named_with_the_fix(tiny_bert, tmp_path, caplog, command):
    model = shutil.copytree(tiny_bert, tmp_path / "model")
    for weights in [*model.glob("*.safetensors"), *model.glob("*.bin")]:
        weights.unlink()
    assert main(_command(command, model, tmp_path)) == 2
    assert f"{model}: holds no weights file" in caplog.text and "copy the weights file" in caplog.text
