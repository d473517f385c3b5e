"""Reference agents and the ARPO trainer for osworld-gym (installed as ``osworld_agents``)."""
