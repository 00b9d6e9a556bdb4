"""Decisions: should the treatment ship? (DESIGN.md "Decisions").

A config that gives its metrics roles (:mod:`abrank.config.decision`) gets, besides the
per-metric verdicts, one decision per readout: ``ship``, ``no-ship``, ``keep-running`` or
``unhealthy``. The pieces, one module each:

- :mod:`abrank.decision.checks`: what each overall comparison says for the rule (the
  guardrail's non-inferiority test, every metric's deterioration check), written into the
  comparison record where the comparisons are made;
- :mod:`abrank.decision.sizing`: the probability that the rule ships at a sample size,
  and the units it needs for the planned power (``keep-running``, ``abrank simulate``);
- :mod:`abrank.decision.health`: the checks that make a readout ``unhealthy``;
- :mod:`abrank.decision.rule`: the rule itself, over the comparison records and the
  health checks, giving the :class:`~abrank.readout.model.Decision` of summary.json.
"""
