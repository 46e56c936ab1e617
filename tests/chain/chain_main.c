/* The chain test program: the sequence (chain_seq.c) linked in, or in a
 * shared library (the "shared" build). */
int chain_run(void);

int main(void)
{
    return chain_run();
}
