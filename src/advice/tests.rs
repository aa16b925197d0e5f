//! Tests of the advice engine: scenarios end to end, hysteresis, and every rule with a healthy neighbour.
