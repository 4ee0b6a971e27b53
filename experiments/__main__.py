"""``python -m experiments`` (what ``make grids`` runs): regenerate the stored grids.

The runner lives in :mod:`experiments.grids`, an importable module, so that joblib's worker
processes load the function they run by its module name. Worker processes import this
module again under another name, hence the guard.
"""

from experiments.grids import main

if __name__ == "__main__":
    raise SystemExit(main())
