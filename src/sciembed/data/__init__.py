"""Paper records, the collections and benchmark releases they come in, citation graphs and samplers.

One module per format (papers, smart, specter, s2orc, scidocs, scirepeval, beir, cocitation), plus
``graph`` (CitationGraph) and ``samplers`` (SPECTER / SPECTROID triplets).
"""
