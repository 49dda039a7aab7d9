"""The RTL/model contract: parser constants and timing, readout formats, comparator slots."""
