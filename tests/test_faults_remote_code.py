"""Code and paths from outside the model folder (issue 51, items 1-3): an ``auto_map`` or a module class that names
code other than sciembed's own is refused in every command unless ``--trust-remote-code``, naming the file and the
entry, and never runs or is published without it; a ``modules.json`` path that leaves the folder is refused
wherever sciembed reads it; a tokenizer that is remote code says so.

Each case writes its own model folder, runs the command a user would, and asserts the exit code, the message and
that no code of the folder ran.
"""

from __future__ import annotations

import json
import re
import shutil

import pytest
from helpers import PAPERS

from sciembed.cli import main


@pytest.fixture
def other(tmp_path):
    """A folder of code outside the model folder, which leaves a marker file when it is imported."""
    folder = tmp_path / "other"
    folder.mkdir()
    marker = tmp_path / "ran"
    (folder / "evilmod.py").write_text(
        f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n"
        "from transformers import BertConfig, BertModel, BertTokenizerFast\n"
        "class EvilConfig(BertConfig):\n    pass\n"
        "class EvilModel(BertModel):\n    config_class = EvilConfig\n"
        "class EvilFast(BertTokenizerFast):\n    pass\n"
    )
    return folder


def _model(source, tmp_path, file, auto_map):
    """A copy of ``source`` whose ``file`` holds ``auto_map``."""
    folder = shutil.copytree(source, tmp_path / "model")
    path = folder / file
    config = json.loads(path.read_text()) if path.is_file() else {}
    path.write_text(json.dumps({**config, "auto_map": auto_map}))
    return folder


def _inputs(tmp_path):
    papers = tmp_path / "papers.jsonl"
    papers.write_text("".join(json.dumps({**p, "paper_id": f"p{i}"}) + "\n" for i, p in enumerate(PAPERS)))
    (tmp_path / "labels.csv").write_text("paper_id,label\n" + "".join(f"p{i},{i % 2}\n" for i in range(len(PAPERS))))
    (tmp_path / "cites.csv").write_text("citing,cited\n" + "".join(f"p{i},p{i + 1}\n" for i in range(len(PAPERS) - 1)))
    return papers


def _command(name, model, tmp_path):
    """The command line of ``name`` loading ``model`` (as a user runs it, with the inputs of :func:`_inputs`)."""
    papers = _inputs(tmp_path)
    return {
        "embed": ["embed", "--model", model, "--input", papers, "--output", tmp_path / "out.jsonl"],
        "evaluate": ["evaluate", "--model", model, "--benchmark", "classification", "--data", tmp_path / "labels.csv"]
        + ["--papers", papers, "--cache-dir", tmp_path / "cache"],
        "neighbours": ["neighbours", "--model", model, "--papers", papers],
        "train": ["train", "--recipe", "specter", "--base", model, "--papers", papers, "--citations"]
        + [tmp_path / "cites.csv", "--output", tmp_path / "run", "--set", "max_steps=1"],
        "export": ["export", "--model", model, "--out", tmp_path / "hub"],
        "push": ["push", "--model", model, "--repo-id", "org/name", "--out", tmp_path / "hub", "--dry-run"],
        "from-bert": ["from-bert", "--family", "multi2spe", "--base", model, "--output", tmp_path / "hub"],
    }[name]


COMMANDS = ("embed", "evaluate", "neighbours", "train", "export", "push", "from-bert")


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_refuses_an_auto_map_naming_code_outside_the_folder(command, tiny_bert, other, tmp_path, caplog):
    model = _model(tiny_bert, tmp_path, "config.json", {"AutoModel": f"{other}--evilmod.EvilModel"})
    assert main([str(a) for a in _command(command, model, tmp_path)]) == 2
    assert f'{model / "config.json"}: auto_map["AutoModel"] = "{other}--evilmod.EvilModel"' in caplog.text
    assert f"code in {other}, outside the model folder" in caplog.text and "--trust-remote-code" in caplog.text
    assert not (tmp_path / "ran").exists() and not (tmp_path / "hub").exists()


# (base fixture, file, auto_map, what the message names); OTHER is the folder of code outside the model.
VARIANTS = [
    ("tiny_bert", "config.json", {"AutoConfig": "OTHER--evilmod.EvilConfig"}, 'auto_map["AutoConfig"]'),
    (
        "tiny_bert",
        "config.json",
        {"AutoModel": "configuration_evil.Evil"},
        "configuration_evil.py is not in the model",
    ),
    ("tiny_bert", "config.json", {"AutoModel": "modeling_multi2spe.Multi2SPEModel"}, "modeling_multi2spe.py is not"),
    (
        "tiny_bert",
        "tokenizer_config.json",
        {"AutoTokenizer": [None, "OTHER--evilmod.EvilFast"]},
        "tokenizer is remote",
    ),
    ("tiny_bert", "tokenizer_config.json", {"AutoTokenizer": ["tok.Slow", None]}, "tok.py is not in the model folder"),
    ("tiny_bert", "config.json", {"AutoModel": None, "AutoTokenizer": ["OTHER--evilmod.EvilFast", None]}, "tokenizer"),
    (
        "tiny_st_base",
        "config_sentence_transformers.json",
        {"AutoModel": "OTHER--evilmod.EvilModel"},
        "config_sentence",
    ),
    ("tiny_st_base", "1_Pooling/config.json", {"AutoConfig": "OTHER--evilmod.EvilConfig"}, "1_Pooling/config.json"),
    ("tiny_st_base", "config.json", {"AutoModel": ["OTHER--evilmod.EvilModel"]}, 'auto_map["AutoModel"]'),
    ("tiny_st_base", "config.json", ["OTHER--evilmod.EvilModel"], "not a mapping of Auto classes to code"),
]


@pytest.mark.parametrize("command", ["embed", "export"])
@pytest.mark.parametrize("base, file, auto_map, named", VARIANTS)
def test_each_kind_of_foreign_auto_map_is_refused(
    base, file, auto_map, named, command, request, other, tmp_path, caplog
):
    auto_map = json.loads(json.dumps(auto_map).replace("OTHER", str(other)))
    model = _model(request.getfixturevalue(base), tmp_path, file, auto_map)
    if "multi2spe" in named:  # sciembed's file, changed
        shutil.copy(request.getfixturevalue("family_model") / "modeling_multi2spe.py", model)
        with (model / "modeling_multi2spe.py").open("a") as code:
            code.write("\nprint('changed')\n")
    assert main([str(a) for a in _command(command, model, tmp_path)]) == 2
    assert named in caplog.text and "--trust-remote-code" in caplog.text
    assert not (tmp_path / "ran").exists() and not (tmp_path / "hub").exists()


def test_a_module_class_naming_another_repository_is_refused(tiny_st_base, tmp_path, caplog):
    """``--`` in a sentence-transformers module class: its package prefix does not make it sentence-transformers'."""
    model = shutil.copytree(tiny_st_base, tmp_path / "model")
    modules = json.loads((model / "modules.json").read_text())
    modules[1]["type"] = "sentence_transformers.models--evilmod.EvilModel"
    (model / "modules.json").write_text(json.dumps(modules))
    for command in ("embed", "export"):
        assert main([str(a) for a in _command(command, model, tmp_path)]) == 2
        assert f"{model / 'modules.json'}: [1].type" in caplog.text and "--trust-remote-code" in caplog.text


def test_an_auto_map_in_a_router_s_route_folder_is_refused(tiny_st_base, other, tmp_path, caplog):
    model = shutil.copytree(tiny_st_base, tmp_path / "model")
    route = "query_0_TaskFormatInput"
    (model / "router_config.json").write_text(json.dumps({"types": {route: "sentence_transformers.Router"}}))
    _model(model, tmp_path / "route", "tokenizer_config.json", {"AutoTokenizer": [None, f"{other}--evilmod.EvilFast"]})
    shutil.move(tmp_path / "route" / "model", model / route)
    assert main([str(a) for a in _command("embed", model, tmp_path)]) == 2
    assert f'{model / route / "tokenizer_config.json"}: auto_map["AutoTokenizer"]' in caplog.text


def test_a_hub_repository_naming_foreign_code_is_refused_before_it_loads(
    tiny_bert, other, tmp_path, monkeypatch, caplog
):
    from huggingface_hub import constants

    snapshot = _model(tiny_bert, tmp_path, "config.json", {"AutoModel": f"{other}--evilmod.EvilModel"})
    repo = tmp_path / "hub" / "models--org--tiny"
    shutil.copytree(snapshot, repo / "snapshots" / "abc123")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("abc123")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    assert main([str(a) for a in _command("embed", "org/tiny", tmp_path)]) == 2
    assert "the Hub repository org/tiny names code that is not sciembed's own" in caplog.text
    assert 'org/tiny/config.json: auto_map["AutoModel"]' in caplog.text and not (tmp_path / "ran").exists()


def test_sciembed_s_own_code_and_null_entries_need_no_consent(family_model, tiny_bert, tmp_path):
    from sciembed.checkpoints import remote_code

    assert remote_code(family_model) == []  # auto_map into its byte-identical configuration_/modeling_multi2spe.py
    model = _model(tiny_bert, tmp_path, "tokenizer_config.json", {"AutoTokenizer": [None, None], "AutoModel": None})
    assert remote_code(model) == []  # null names no code


def test_export_with_consent_publishes_and_runs_the_code_it_was_given(tiny_bert, other, tmp_path):
    model = _model(tiny_bert, tmp_path, "config.json", {"AutoModel": f"{other}--evilmod.EvilModel"})
    assert main(["export", "--model", str(model), "--out", str(tmp_path / "hub"), "--trust-remote-code"]) == 0
    assert (tmp_path / "ran").exists()  # the fresh-process validation ran the code the user chose to trust
    assert json.loads((tmp_path / "hub" / "config.json").read_text())["auto_map"]["AutoModel"].endswith("EvilModel")


def test_validation_and_push_of_a_folder_naming_foreign_code_refuse_it(tiny_bert, other, tmp_path):
    from sciembed.hub.export import validate_export
    from sciembed.hub.push import push_folder

    model = _model(tiny_bert, tmp_path, "config.json", {"AutoModel": f"{other}--evilmod.EvilModel"})
    (model / "README.md").write_text("---\nlicense: mit\n---\n")
    with pytest.raises(ValueError, match=r'config.json: auto_map\["AutoModel"\].*trust_remote_code=True'):
        validate_export(model)
    with pytest.raises(ValueError, match=r'config.json: auto_map\["AutoModel"\].*trust_remote_code=True'):
        push_folder(model, "org/name")
    assert not (tmp_path / "ran").exists()


def test_push_refuses_a_python_file_changed_after_the_export(family_model, tmp_path):
    from sciembed.hub.push import push_folder

    model = shutil.copytree(family_model, tmp_path / "model")
    (model / "README.md").write_text("---\nlicense: mit\n---\n")
    [code] = sorted(model.glob("modeling_*.py"))
    code.write_text(code.read_text() + "\nprint('changed')\n")
    with pytest.raises(ValueError, match=rf"{code.name} is not sciembed's own code.*--trust-remote-code"):
        push_folder(model, "org/name")


# 2. modules.json paths that leave the folder ------------------------------------------------------------


@pytest.mark.parametrize("path", ["..", "../outside", "1_Pooling/../../outside", "ABSOLUTE", "LINK"])
@pytest.mark.parametrize("command", ["embed", "train", "export", "push"])
def test_a_module_path_out_of_the_folder_is_refused(path, command, tiny_st_base, tmp_path, caplog):
    model = shutil.copytree(tiny_st_base, tmp_path / "model")
    outside = shutil.copytree(model / "1_Pooling", tmp_path / "outside")
    modules = json.loads((model / "modules.json").read_text())
    if path == "LINK":  # the folder the entry names is a link to one outside
        shutil.rmtree(model / "1_Pooling")
        (model / "1_Pooling").symlink_to(outside, target_is_directory=True)
        path = "1_Pooling"
    modules[1]["path"] = str(outside) if path == "ABSOLUTE" else path
    (model / "modules.json").write_text(json.dumps(modules))
    (model / "README.md").write_text("---\nlicense: mit\n---\n")
    if command == "push":  # an exported folder changed afterwards
        from sciembed.hub.push import push_folder

        with pytest.raises(ValueError, match=r"modules.json: \[1\].path = .* leaves the model folder"):
            push_folder(model, "org/name")
        return
    assert main([str(a) for a in _command(command, model, tmp_path)]) == 2
    assert (
        f"{model / 'modules.json'}: [1].path = {json.dumps(modules[1]['path'])} leaves the model folder" in caplog.text
    )
    assert not (tmp_path / "hub").exists() and not (tmp_path / "run" / "model").exists()


@pytest.mark.parametrize(
    "entry, says",
    [
        ({"name": "2"}, r'\[2\].name = "2" is the name of \[1\] too'),
        ({"path": "2_Pool"}, r'\[1\].path = "2_Pool" is not a folder of the model folder'),
        ({"path": "~/pool"}, r'\[1\].path = "~/pool" is not a folder of the model folder'),
        ({"type": "sentence_transformers.models.Poolingg"}, r'\[1\].type = ".*Poolingg" is no class of the installed'),
        ({"type": None}, r"\[1\].type = null names no module class"),
        ({"path": None}, r"\[1\].path = null is not a folder path"),
    ],
)
@pytest.mark.parametrize("command", ["embed", "train", "export"])
def test_a_module_entry_sentence_transformers_cannot_load_is_named(
    entry, says, command, tiny_st_base, tmp_path, caplog
):
    model = shutil.copytree(tiny_st_base, tmp_path / "model")
    modules = json.loads((model / "modules.json").read_text())
    modules[1].update(entry)
    (model / "modules.json").write_text(json.dumps(modules))
    assert main([str(a) for a in _command(command, model, tmp_path)]) == 2
    assert re.search(re.escape(str(model / "modules.json")) + ": " + says, caplog.text)
    assert not (tmp_path / "hub").exists() and not (tmp_path / "out.jsonl").exists()


def test_a_router_route_out_of_the_folder_is_refused(tiny_st_base, tmp_path):
    from sciembed.checkpoints import module_folders

    model = shutil.copytree(tiny_st_base, tmp_path / "model")
    (model / "router_config.json").write_text(json.dumps({"types": {"../query": "format_routes.TaskFormatInput"}}))
    with pytest.raises(ValueError, match=r'router_config.json: types\["../query"\] = "../query" leaves the model'):
        module_folders(model)


# 3. A tokenizer that is remote code ---------------------------------------------------------------------


def test_a_remote_code_tokenizer_says_so_and_loads_with_consent(tiny_bert, tmp_path, caplog):
    model = _model(tiny_bert, tmp_path, "tokenizer_config.json", {"AutoTokenizer": ["tok.Slow", None]})
    (model / "tokenizer.json").unlink()
    (model / "tok.py").write_text(
        f"import pathlib\npathlib.Path({str(tmp_path / 'ran')!r}).write_text('ran')\n"
        "from transformers import BertTokenizer\nclass Slow(BertTokenizer):\n    pass\n"
    )
    argv = [str(a) for a in _command("embed", model, tmp_path)]
    assert main(argv) == 2
    assert "the tokenizer is remote code: tok.py is not sciembed's own code" in caplog.text
    assert "--trust-remote-code" in caplog.text and "sentencepiece" not in caplog.text
    assert not (tmp_path / "ran").exists()
    assert main([*argv, "--trust-remote-code"]) == 0
    assert (tmp_path / "ran").exists()


def test_a_tokenizer_read_from_outside_the_folder_needs_consent(tiny_st_base, tmp_path, caplog):
    model = shutil.copytree(tiny_st_base, tmp_path / "model")
    settings = json.loads((model / "sentence_bert_config.json").read_text())
    (model / "sentence_bert_config.json").write_text(
        json.dumps({**settings, "tokenizer_name_or_path": str(tmp_path / "elsewhere")})
    )
    for command in ("embed", "export"):
        assert main([str(a) for a in _command(command, model, tmp_path)]) == 2
        assert "sentence_bert_config.json: tokenizer_name_or_path" in caplog.text
        assert "outside the model folder" in caplog.text and "--trust-remote-code" in caplog.text
        caplog.clear()


def _tokenizer(source, tmp_path, tokenizer_class, drop=("tokenizer.json",)):
    """A copy of ``source`` whose ``tokenizer_config.json`` names ``tokenizer_class``, without the files ``drop``."""
    folder = shutil.copytree(source, tmp_path / "model")
    config = json.loads((folder / "tokenizer_config.json").read_text())
    (folder / "tokenizer_config.json").write_text(json.dumps({**config, "tokenizer_class": tokenizer_class}))
    for name in drop:
        (folder / name).unlink()
    return folder


@pytest.mark.parametrize("command", ["embed", "evaluate", "neighbours", "train", "export", "from-bert"])
def test_a_tokenizer_class_transformers_lacks_is_named_in_every_command(command, tiny_bert, tmp_path, caplog):
    model = _tokenizer(tiny_bert, tmp_path, "SciTokenizer")
    assert main([str(a) for a in _command(command, model, tmp_path)]) == 2
    assert f'{model / "tokenizer_config.json"}: tokenizer_class = "SciTokenizer", a class transformers does not' in (
        caplog.text
    )
    assert "misspelt" in caplog.text and "--trust-remote-code" in caplog.text and "sentencepiece" not in caplog.text
    assert not (tmp_path / "hub").exists() and not (tmp_path / "out.jsonl").exists()


def test_a_misspelt_tokenizer_class_is_given_the_class_meant(tiny_st_base, tmp_path, caplog):
    model = _tokenizer(tiny_st_base, tmp_path, "BertTokenizr")
    assert main([str(a) for a in _command("embed", model, tmp_path)]) == 2
    assert (
        'tokenizer_class = "BertTokenizr", a class transformers does not have. It is misspelt (transformers has '
        "BertTokenizer)" in caplog.text
    )


@pytest.mark.parametrize(
    "tokenizer_class, drop",
    [
        ("BertTokenizer", ["tokenizer.json", "vocab.txt"]),
        ("T5Tokenizer", ["tokenizer.json"]),
        ("PreTrainedTokenizerFast", ["tokenizer.json"]),
    ],
)
def test_a_tokenizer_class_whose_vocabulary_is_missing_is_refused(tokenizer_class, drop, tiny_bert, tmp_path, caplog):
    model = _tokenizer(tiny_bert, tmp_path, tokenizer_class, drop)
    assert main([str(a) for a in _command("embed", model, tmp_path)]) == 2
    assert f'tokenizer_class = "{tokenizer_class}" reads its vocabulary from tokenizer.json or ' in caplog.text
    assert f"and {model} holds none of them" in caplog.text and not (tmp_path / "out.jsonl").exists()


def test_a_tokenizer_needing_a_package_keeps_transformers_advice_and_names_the_folder(tiny_bert, tmp_path, caplog):
    import importlib.util

    if importlib.util.find_spec("sentencepiece") or importlib.util.find_spec("tiktoken"):
        pytest.skip("this environment has sentencepiece or tiktoken, so the tokenizer's package is not missing")
    model = _tokenizer(tiny_bert, tmp_path, "T5Tokenizer")
    (model / "spiece.model").write_bytes(b"\x00 a SentencePiece model")
    assert main([str(a) for a in _command("embed", model, tmp_path)]) == 2
    assert f"{model}: its tokenizer (T5Tokenizer) does not load: " in caplog.text and "install" in caplog.text


@pytest.mark.parametrize("drop", [[], ["tokenizer.json"]])
def test_a_tokenizer_with_its_files_loads_whatever_its_class(drop, tiny_bert, tmp_path):
    model = _tokenizer(tiny_bert, tmp_path, "SciTokenizer" if not drop else "BertTokenizer", drop)
    assert main([str(a) for a in _command("embed", model, tmp_path)]) == 0


# 2. Code an auto_map names, given consent, missing from the folder ------------------------------------------


@pytest.mark.parametrize("command", ["embed", "train", "export", "from-bert"])
@pytest.mark.parametrize(
    "file, entry, value",
    [
        ("config.json", "AutoModel", "modeling_sci.SciModel"),
        ("tokenizer_config.json", "AutoTokenizer", ["tokenization_sci.SciTokenizer", None]),
    ],
)
def test_with_consent_a_module_file_missing_from_the_folder_is_named(
    command, file, entry, value, tiny_bert, tmp_path, caplog
):
    model = _model(tiny_bert, tmp_path, file, {entry: value})
    argv = [str(a) for a in _command(command, model, tmp_path)]
    assert main([*argv, "--trust-remote-code"]) == 2
    module = (value[0] if isinstance(value, list) else value).split(".")[0]
    assert f'the folder {model}: {file}: auto_map["{entry}"] = ' in caplog.text
    assert (
        f"names code in {module}.py, which is not in the folder" in caplog.text and "huggingface.co" not in caplog.text
    )


@pytest.mark.parametrize(
    ("file", "entry", "value"),
    [
        ("config.json", "AutoModel", "evil/repo--model.EvilModel"),
        ("tokenizer_config.json", "AutoTokenizer", ["evil/repo--tok.EvilTokenizer", None]),
    ],
)
def test_with_consent_code_in_a_repository_offline_and_not_cached_is_named(
    file, entry, value, tiny_bert, tmp_path, caplog
):
    model = _model(tiny_bert, tmp_path, file, {entry: value})
    argv = [str(a) for a in _command("embed", model, tmp_path)]
    assert main([*argv, "--trust-remote-code"]) == 2
    assert f'{file}: auto_map["{entry}"] = ' in caplog.text
    assert "names code in the Hub repository evil/repo, which HF_HUB_OFFLINE keeps from being fetched" in caplog.text
