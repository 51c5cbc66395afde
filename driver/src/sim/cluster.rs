//! A scripted server of several nodes for the simulation.
