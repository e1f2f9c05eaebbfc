
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn often_rewritten_chunks_rank_higher_and_cool_down() {
        // 4 chunks of 4 pages, 4 levels, halving every 64 pages written.
        let mut c = Lifetime::new(16, 4, 64, 4);
        // Chunk 0 rewritten 8 times (32 pages), chunk 2 written once.
        let mut level = 0;
        for _ in 0..8 {
            for p in 0..4 {
                level = c.classify(p);
            }
        }
        assert_eq!(level, 3, "1 + 32 / 4 = 9: log2 is 3");
        assert_eq!(c.classify(8), 0);
        // Two windows later chunk 0's count is a quarter: 32 / 4 = 8 (+1), level 1.
        for _ in 0..128 {
            c.classify(12);
        }
        assert_eq!(c.classify(0), 1);
        let mut memory = Vec::new();
        c.memory(&mut memory);
        assert_eq!(memory, vec![("lifetime_table", 4 * CHUNK_BYTES)]);
    }
}
