//! The mechanisms schemes of several families share, written once: the page allocator and
//! its garbage collection (`alloc`) and pseudo-SLC cache (`slc`), the translation-page store that keeps a map on flash
//! (`translation`), and the intrusive lists and replacement policies of the map caches
//! (`mapcache`). Each family's own shared machinery lives in its folder (`demand`,
//! `hashed`, `logblock`).

pub mod alloc;
pub mod mapcache;
pub mod slc;
pub mod translation;
