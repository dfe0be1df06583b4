"""The leaks an audit looks for in a published dataset: its rows read and hashed again
(``target``), then the checks over them: the same picture across splits by hash, in any
orientation or negated (``leakage``, ``turned``), identical decoded pixels (``identical``),
visits of one patient across splits (``visits``), hint words in referrals (``referrals``).
``curation.audit`` runs them and reports."""
