"""The book's experiment grids: what each stored file in ``book/data`` trains (:mod:`experiments.configs`)
and the one command that trains them (:mod:`experiments.grids`, ``make grids``)."""
