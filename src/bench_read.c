/* PLACEHOLDER: replaced by its implementation. */
typedef int tsim_placeholder_unit;
