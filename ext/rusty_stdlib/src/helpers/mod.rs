//! Small pieces every binding needs: GVL release and string locking.

pub mod nogvl;
pub mod tmplock;
