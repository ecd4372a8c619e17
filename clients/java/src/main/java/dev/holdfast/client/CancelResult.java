package dev.holdfast.client;

/**
 * The result of a Cancel.
 *
 * @param cancelled how many claims were removed
 * @param replayed true when this answer repeats an earlier identical cancel with the same key
 */
public record CancelResult(int cancelled, boolean replayed) {}
