"""The harness's own checks: the leak check of the daemon log finds a token
or its random half wherever it stands, and nothing else."""
import harness

TOKENS = {"123.AAAAAAAAAAAAAAAAAAAAAB", "45.abcdefghijklmnopqrstuv"}


def test_whole_tokens_are_found_and_only_whole():
    assert harness.tokens_in("x token=123.AAAAAAAAAAAAAAAAAAAAAB y", TOKENS) == {
        "123.AAAAAAAAAAAAAAAAAAAAAB"}
    # Another fence is another token.
    assert harness.tokens_in("x 9123.AAAAAAAAAAAAAAAAAAAAAB y", TOKENS) == set()
    assert harness.tokens_in("", TOKENS) == set()


def test_the_random_half_is_found_even_inside_a_longer_run():
    assert harness.randomness_in("zzabcdefghijklmnopqrstuvzz", TOKENS)
    assert harness.randomness_in("token=45.abcdefghijklmnopqrstuv", TOKENS)
    assert harness.randomness_in("9123.AAAAAAAAAAAAAAAAAAAAAB", TOKENS)


def test_what_is_not_a_token_is_not_reported():
    assert not harness.randomness_in("abcdefghijklmnopqrstu", TOKENS)  # 21 characters
    assert not harness.randomness_in(
        "req cid=0309f0fd2d5ab00c op=hold token_fp=8680c12b8a8cf17a", TOKENS)
    assert not harness.randomness_in("AAAAAAAAAAAAAAAAAAAAAA", TOKENS)
