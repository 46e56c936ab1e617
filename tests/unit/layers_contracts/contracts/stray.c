/* A source file in a folder of headers only: check_layers must see it. */
int stray_value(void)
{
    return 1;
}
