/* PLACEHOLDER: the GPU stub. */
typedef int tsim_placeholder_unit;
