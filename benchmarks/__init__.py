"""Benchmarks: scripts that print figures (build time, judge throughput, report size, generation
throughput), and tiny_model.py for the vLLM CPU test. Not shipped in the wheel.
"""
