pub(crate) mod frames;
