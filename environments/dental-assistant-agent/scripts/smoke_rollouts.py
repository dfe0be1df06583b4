"""Smoke run: the deterministic reference policy over every default case, through the real
rollout path; writes validation/reference_smoke.json and exits non-zero unless every case
scores 1.0. Not a model evaluation.

    python scripts/smoke_rollouts.py [output.json]
"""

from dental_assistant_agent.smoke import main

if __name__ == "__main__":
    main()
