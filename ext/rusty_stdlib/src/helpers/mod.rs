//! Small pieces every binding needs: GVL release, string locking, raw object reads.

pub mod constants;
pub mod error;
pub mod float;
pub mod fresh_array;
pub mod fresh_hash;
pub mod hash;
pub mod hash_layout;
pub mod ids;
pub mod nogvl;
pub mod ractor;
pub mod raw;
pub mod reentry;
pub mod replaced;
pub mod shape;
pub mod stack_scrub;
pub mod tmplock;
