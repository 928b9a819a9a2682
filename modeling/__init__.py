"""Remote-code model families, one folder each (shipped next to the weights; installed as sciembed.modeling).

Files here import only torch, transformers and their sibling files, so a model saved with them loads
with ``AutoModel.from_pretrained(path, trust_remote_code=True)`` where sciembed is not installed.
"""
