"""The audit's checks over the films read from a target: leakage by hash across splits
(``leakage``), in every orientation (``turned``), by identical pixels (``identical``), visits
of one patient across splits (``visits``) and the referral fields (``referrals``)."""
