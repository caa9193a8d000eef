/* SPDX-License-Identifier: MIT */
/* One public header, included alone (tests/headers/meson.build builds this
 * file once per header and language standard, as C and as C++): it must
 * bring everything it uses and compile without warnings. */
#include CLATTN_TEST_HEADER
#include CLATTN_TEST_HEADER /* and twice: the include guard works */

int main(void)
{
    return 0;
}
