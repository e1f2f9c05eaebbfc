//! The device model: the NAND array's geometry, rules and state ([`nand`]), die and
//! channel timing ([`timing`]), free-block pools ([`blocks`]) and the flash image a restart
//! scans ([`recovery`]).

pub mod blocks;
pub mod geometry;
pub mod nand;
pub mod recovery;
pub mod timing;
