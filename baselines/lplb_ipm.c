/* PLACEHOLDER */
typedef int tsim_placeholder_unit;
