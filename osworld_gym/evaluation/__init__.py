"""Task evaluation: getters that read a desktop's final state and pure metrics that score it.

``osworld_gym.evaluation.getters`` reaches the desktop through the guest client;
``osworld_gym.evaluation.metrics`` holds the pure, offline scoring functions under OSWorld's
names. The and/or combination of several metrics and the infeasible-task rule live with the
evaluator that calls both.
"""
