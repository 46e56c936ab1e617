int high_done(int x);
int high_entry(int x);
