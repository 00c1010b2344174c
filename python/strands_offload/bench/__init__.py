"""``strands-offload bench``: every operation side by side with the reference, in one process.

:mod:`.cases` defines what is measured (shared with ``benches/bench_cases.py``), :mod:`.corpus`
finds the inputs on the machine, :mod:`.report` times the cases and writes the table, the JSON
file and the chart.
"""
