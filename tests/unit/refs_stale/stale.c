/* A fixture of unit.check_refs_sees_stale: this comment names
 * bounce_gone.c, a file that does not exist, and stale.c, which does. */
int stale_fixture(void)
{
    return 0;
}
