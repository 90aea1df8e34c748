#!/bin/bash
# Twenty-third session, 2 CPU cores (this machine), from the repository root, at 767a1e4:
# `nuejax xenonnt` first and warm (xenonnt.json), then `nuejax borexino` with its magnetic-moment and
# NSI stages in turn (as main runs on 2 cores: borexino_in_turn.json) and beside the others
# (BESIDE_MIN_SPARE = 1 by a prelude: borexino_beside.json), first runs, then warm runs alternated.
set -u
O=${O:-/tmp/nuejax_cpu2}
mkdir -p "$O"
python benchmarks/timings/command_times.py --cache "$O/c_x" --out "$O/xenonnt.json" --runs first,warm --timeout 2400 xenonnt
P="import nuejax.analyses.borexino_run as b; b.BESIDE_MIN_SPARE = 1"
python benchmarks/timings/command_times.py --cache "$O/c_turn" --out "$O/borexino_in_turn.json" --runs first borexino
python benchmarks/timings/command_times.py --cache "$O/c_side" --out "$O/borexino_beside.json" --runs first --prelude "$P" borexino
for i in 1 2; do
  python benchmarks/timings/command_times.py --cache "$O/c_turn" --out "$O/borexino_in_turn.json" --runs warm borexino
  python benchmarks/timings/command_times.py --cache "$O/c_side" --out "$O/borexino_beside.json" --runs warm --prelude "$P" borexino
done
