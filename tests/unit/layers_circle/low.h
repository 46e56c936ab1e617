/* A lower module that calls back up by name: check_layers must see it. */
int low_work(int x);
