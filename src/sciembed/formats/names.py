"""The task formats of SciRepEval (Singh et al. 2023): one embedding per format."""

FORMATS = ("classification", "regression", "proximity", "adhoc_query")
#: The format a multi-format model embeds in when none is asked for.
DEFAULT_FORMAT = "proximity"
