"""Threadline's benchmarks: every figure of issue 8, printed as one table.

Run ``python -m bench`` (``--quick`` for the CI smoke run). Benchmarks print figures
and never fail on a missed target; the table says which targets were met.
"""
