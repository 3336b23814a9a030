"""Reproducing a published report: resolve -> plan -> (build, bench) -> judge -> render.

``openssl_matrix.repro.run`` runs the steps; each step is a module here."""
