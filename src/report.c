/* report */
typedef int tsim_placeholder_unit;
