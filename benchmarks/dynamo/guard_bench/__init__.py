"""The parts of the guard benchmarks (guard_overhead.py and the scripts
beside it): models, compile capture, timing, callgrind counts, tables and
the chart. Run the scripts from anywhere; they import this folder as a
package from their own directory."""
