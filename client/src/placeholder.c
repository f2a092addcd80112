int nwb__client_placeholder(void); int nwb__client_placeholder(void) { return 0; }
