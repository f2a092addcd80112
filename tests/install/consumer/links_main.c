/* SPDX-License-Identifier: MIT */
/* links_main.c - an empty program the consumer links against each optional nwb library. */
int main(void)
{
    return 0;
}
